import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { z } from '../../src/core/zod.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';

// A small JSON file in STATE_DIR that a worker keeps across restarts (the finished seals, the
// accepted control records): read once at start (a missing or unreadable file is a new start,
// said in the log), written whole through a rename so a crash never leaves half a file. When it
// cannot be written the worker keeps going on what it holds in memory and says so once.

export interface StateFile<T> {
  read(): T | undefined;
  write(value: T): void;
}

/** `what`: how the log names it ("the list of finished work"). */
export function stateFile<T>(path: string, schema: z.ZodMiniType<T>, what: string, log: Logger): StateFile<T> {
  let warned = false;
  return {
    read() {
      try {
        const parsed = schema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
        if (parsed.success) return parsed.data;
        log.warn({ path }, `${what} does not parse: starting anew`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ path, err: (err as Error).message }, `cannot read ${what}: starting anew`);
      }
      return undefined;
    },
    write(value) {
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        const tmp = `${path}.tmp`;
        writeFileSync(tmp, JSON.stringify(value), { mode: 0o600 });
        renameSync(tmp, path);
        warned = false;
      } catch (err) {
        if (!warned) log.warn({ path, err: (err as Error).message }, `cannot save ${what}: kept in memory only (a restart forgets it)`);
        warned = true;
      }
    },
  };
}
