import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../../src/observability/logger.ts';
import type { ControlMemory, Known } from '../../src/controls/sealed-records.ts';

// The newest mode and pause record this worker accepted per field (src/controls/sealed-records.ts),
// kept in STATE_DIR so that a restart still refuses an older record put back into Redis. If the
// file cannot be written the worker keeps it in memory and says so (a restart then forgets; the
// seals' short life still bounds a replay).

const File = z.record(z.string(), z.object({ gen: z.number().int().nonnegative(), text: z.string().max(65_536) }));

/** One file per installation (QUEUE_PREFIX) and process: the same node may run two installations. */
export const controlMemoryFile = (prefix: string, process: string): string => `controls-accepted.${process}.${prefix.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`;

export function controlMemory(path: string, log: Logger): ControlMemory {
  let warned = false;
  return {
    load() {
      try {
        const parsed = File.safeParse(JSON.parse(readFileSync(path, 'utf8')));
        if (parsed.success) return new Map(Object.entries(parsed.data));
        log.warn({ path }, 'the accepted control records do not parse: starting anew');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ path, err: (err as Error).message }, 'cannot read the accepted control records: starting anew');
      }
      return new Map<string, Known>();
    },
    save(known) {
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        const tmp = `${path}.tmp`;
        writeFileSync(tmp, JSON.stringify(Object.fromEntries(known)), { mode: 0o600 });
        renameSync(tmp, path);
        warned = false;
      } catch (err) {
        if (!warned) log.warn({ path, err: (err as Error).message }, 'cannot save the accepted control records: kept in memory only (a restart forgets them)');
        warned = true;
      }
    },
  };
}
