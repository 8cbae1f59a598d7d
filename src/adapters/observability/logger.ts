import { pino, type DestinationStream, type Logger } from 'pino';
import { redactUrlsIn } from '../../core/config/redact-url.ts';

// Structured logs only. Redaction is a safety net: nothing secret should be logged in the first
// place (tokens are compared, never printed; Ceph keyrings are paths, never contents). Every line
// also has the userinfo of any URL in it hidden (a REDIS_URL's password inside an error message,
// wherever it came from): the written line itself is rewritten, so no field or message escapes.

export type { Logger };

const BUFFER_BYTES = 4096;
const FLUSH_EVERY_MS = 1000;

export interface LoggerOptions {
  /**
   * Write stdout in blocks (pino's sonic-boom, async, 4 KiB): lines are held until a block fills
   * or a second has passed, instead of one write(2) per line. pino flushes what is held when the
   * process exits (also through our SIGTERM shutdown); a SIGKILL can lose up to one block. For
   * the receiver, whose hot path logs a line per batch of stored jobs (one write per
   * line cost it per request: bench/README.md, "Figures behind the code"); what those lines say is also in Redis (the jobs).
   */
  buffered?: boolean;
  /** Where the JSON lines go instead of stdout (`npm start` formats them for a person at a terminal). */
  destination?: DestinationStream;
}

/**
 * The level to start with. An entry point makes its logger before configuration is validated, so
 * a LOG_LEVEL pino does not know (verbose) must not throw here: the logger starts at info, and
 * loadConfig then stops the process with exit 2 and a line naming LOG_LEVEL's accepted values.
 */
const startLevel = (level: string | undefined): string =>
  level !== undefined && (Object.hasOwn(pino.levels.values, level) || level === 'silent') ? level : 'info';

export function createLogger(name: string, level = process.env['LOG_LEVEL'], opts: LoggerOptions = {}): Logger {
  const options = {
    name,
    level: startLevel(level),
    redact: {
      paths: ['token', 'tokens', '*.token', '*.tokens', 'authorization', '*.authorization', 'headers.authorization', 'req.headers.authorization'],
      censor: '[redacted]',
    },
  };
  if (opts.destination) return pino({ ...options, hooks: { streamWrite: redactUrlsIn } }, opts.destination);
  if (!opts.buffered) return pino({ ...options, hooks: { streamWrite: redactUrlsIn } });
  const dest = pino.destination({ dest: 1, sync: false, minLength: BUFFER_BYTES });
  // A quiet receiver still shows its lines within a second: flush what is held, when something is.
  let held = false;
  setInterval(() => {
    if (!held) return;
    held = false;
    try {
      dest.flush();
    } catch {
      // Destroyed: the process is shutting down and pino flushed on its way out.
    }
  }, FLUSH_EVERY_MS).unref();
  return pino(
    {
      ...options,
      hooks: {
        streamWrite: (line) => {
          held = true;
          return redactUrlsIn(line);
        },
      },
    },
    dest,
  );
}
