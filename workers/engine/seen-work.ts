import { z } from '../../src/core/zod.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { stateFile } from './state-file.ts';

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
  const file = path ? stateFile(path, File, 'the list of finished work', log) : undefined;
  const seen = new Map<string, number>(Object.entries(file?.read() ?? {}));
  return {
    finished(mac) {
      const exp = seen.get(mac);
      return exp !== undefined && exp >= now();
    },
    markFinished(mac, exp) {
      const t = now();
      for (const [m, e] of seen) if (e < t) seen.delete(m);
      seen.set(mac, exp);
      file?.write(Object.fromEntries(seen));
    },
  };
}
