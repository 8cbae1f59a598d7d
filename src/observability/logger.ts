import { pino, type Logger } from 'pino';

// Structured logs only. Redaction is a safety net: nothing secret should be logged in the first
// place (tokens are compared, never printed; Ceph keyrings are paths, never contents).

export type { Logger };

export function createLogger(name: string, level = process.env['LOG_LEVEL'] ?? 'info'): Logger {
  return pino({
    name,
    level,
    redact: { paths: ['token', 'tokens', '*.token', '*.tokens', 'authorization', '*.authorization', 'headers.authorization', 'req.headers.authorization'], censor: '[redacted]' },
  });
}
