import type { ErrorRequestHandler } from 'express';
import type { Logger } from '../../adapters/observability/logger.ts';

// Bad input is the sender's problem and gets a 4xx that says what is wrong; a 5xx means we
// failed. Alertmanager retries 5xx and drops 4xx, so this mapping decides what is retried.

interface BodyParserError {
  type?: string;
  status?: number;
  statusCode?: number;
  limit?: number;
}

export function errorHandler(log: Logger, onBodyError: (path: string, outcome: 'bad_json' | 'too_large' | 'invalid') => void): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const e = (err ?? {}) as BodyParserError;
    const status = e.status ?? e.statusCode;
    if (e.type === 'entity.parse.failed') {
      onBodyError(req.path, 'bad_json');
      return res.status(400).json({ error: 'body is not valid JSON' });
    }
    if (e.type === 'entity.too.large') {
      onBodyError(req.path, 'too_large');
      return res.status(413).json({ error: `body is larger than the limit of ${e.limit ?? '?'} bytes` });
    }
    if (typeof status === 'number' && status >= 400 && status < 500) {
      onBodyError(req.path, 'invalid');
      return res.status(status).json({ error: (err as Error).message || 'bad request' });
    }
    log.error({ err, path: req.path }, 'unhandled error');
    return res.status(500).json({ error: 'internal error' });
  };
}
