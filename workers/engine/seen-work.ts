import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../../src/observability/logger.ts';

// The seals of work this worker finished, kept until each seal expires, so the same sealed job
// put back on the queue (re-added after BullMQ removed it, or moved back from `completed`) is
// refused as a replay. Retries and parked re-runs of an unfinished job are not finished, so they
// pass. Kept in STATE_DIR so a restart remembers; if the file cannot be written the worker keeps
// the list in memory and says so (a restart then forgets; the seals' expiry still bounds it).

const File = z.record(z.string(), z.number());

export interface SeenWork {
  finished(mac: string): boolean;
  markFinished(mac: string, exp: number): void;
}

export function seenWork(path: string | undefined, log: Logger, now: () => number = Date.now): SeenWork {
  const seen = new Map<string, number>();
  if (path) {
    try {
      const parsed = File.safeParse(JSON.parse(readFileSync(path, 'utf8')));
      if (parsed.success) for (const [mac, exp] of Object.entries(parsed.data)) seen.set(mac, exp);
      else log.warn({ path }, 'the list of finished work does not parse: starting a new one');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ path, err: (err as Error).message }, 'cannot read the list of finished work: starting a new one');
    }
  }
  let warned = false;
  const save = (): void => {
    if (!path) return;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const tmp = `${path}.tmp`;
      writeFileSync(tmp, JSON.stringify(Object.fromEntries(seen)), { mode: 0o600 });
      renameSync(tmp, path);
      warned = false;
    } catch (err) {
      if (!warned) log.warn({ path, err: (err as Error).message }, 'cannot save the list of finished work: kept in memory only (a restart forgets it)');
      warned = true;
    }
  };
  return {
    finished(mac) {
      const exp = seen.get(mac);
      return exp !== undefined && exp >= now();
    },
    markFinished(mac, exp) {
      const t = now();
      for (const [m, e] of seen) if (e < t) seen.delete(m);
      seen.set(mac, exp);
      save();
    },
  };
}
