import express, { type Request, type RequestHandler } from 'express';

// Every body under /v1 is JSON. Webhook senders (Alertmanager, node-problem-detector, the event
// exporter) send it uncompressed in UTF-8, and that is the hot path: this reader handles exactly
// that case with a Buffer list and one JSON.parse, and hands everything else (a Content-Encoding,
// another charset) to express.json, so those keep body-parser's behaviour and errors. Either
// way the errors carry body-parser's `type`/`status`, which errors.ts maps to 400 and 413.
// (body-parser's per-request content-type/charset/iconv/stream plumbing was a
// measurable share of a webhook's CPU.)

interface BodyError extends Error {
  type: 'entity.too.large' | 'entity.parse.failed' | 'request.aborted';
  status: number;
  limit?: number;
}

/** The text of each body read by the lean path, for the repeat answers of routes/webhooks.ts. */
const texts = new WeakMap<Request, string>();

/** The body as received, when the lean path read it (UTF-8, not compressed); undefined otherwise. */
export const bodyText = (req: Request): string | undefined => texts.get(req);

function bodyError(type: BodyError['type'], status: number, message: string, limit?: number): BodyError {
  return Object.assign(new Error(message), { type, status, ...(limit !== undefined ? { limit } : {}) });
}

/** Only a body sent as-is in UTF-8 (or with no charset named) takes the lean path. */
function plainUtf8(contentEncoding: string | undefined, contentType: string | undefined): boolean {
  if (contentEncoding !== undefined && contentEncoding.toLowerCase() !== 'identity') return false;
  if (contentType === undefined) return true;
  const i = contentType.toLowerCase().indexOf('charset=');
  if (i < 0) return true;
  const charset = contentType
    .slice(i + 8)
    .split(';', 1)[0]!
    .trim()
    .replace(/^"|"$/g, '')
    .toLowerCase();
  return charset === 'utf-8' || charset === 'utf8';
}

export function jsonBody(limit: number): RequestHandler {
  const fallback = express.json({ limit, type: () => true, strict: false });
  return (req, res, next) => {
    const h = req.headers;
    if (!plainUtf8(h['content-encoding'], h['content-type'])) return fallback(req, res, next);
    const declared = h['content-length'];
    // No body at all (what type-is calls hasBody): nothing to parse, as with body-parser.
    if (declared === undefined && h['transfer-encoding'] === undefined) return next();
    if (declared !== undefined && Number(declared) > limit) {
      // Read and drop what was sent so the connection stays usable, then answer 413.
      req.resume();
      let answered = false;
      const fail = (): void => {
        if (answered) return;
        answered = true;
        next(bodyError('entity.too.large', 413, 'request entity too large', limit));
      };
      if (req.complete) fail();
      else req.once('end', fail).once('error', fail);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        req.off('data', onData);
        req.resume();
        req.once('end', () => next(bodyError('entity.too.large', 413, 'request entity too large', limit)));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('error', (err) => {
      if (failed) return;
      failed = true;
      next(bodyError('request.aborted', 400, `request aborted: ${err.message}`));
    });
    req.once('end', () => {
      if (failed) return;
      let text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
      // A byte order mark is dropped, as body-parser's decoder does.
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.length === 0) {
        req.body = {};
        return next();
      }
      try {
        req.body = JSON.parse(text);
      } catch (err) {
        return next(bodyError('entity.parse.failed', 400, (err as Error).message));
      }
      texts.set(req, text);
      next();
    });
  };
}
