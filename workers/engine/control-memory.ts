import { z } from '../../src/core/zod.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { ControlMemory, Known } from '../../src/core/controls/sealed-records.ts';
import { stateFile } from './state-file.ts';

// The newest mode and pause record this worker accepted per field (src/core/controls/sealed-records.ts),
// kept in STATE_DIR so that a restart still refuses an older record put back into Redis. If the
// file cannot be written the worker keeps it in memory (a restart then forgets; the seals' short
// life still bounds a replay).

const File = z.lazy(() => z.record(z.string(), z.object({ gen: z.number().check(z.int(), z.nonnegative()), text: z.string().check(z.maxLength(65_536)) })));

/** One file per installation (QUEUE_PREFIX) and process: the same node may run two installations. */
export const controlMemoryFile = (prefix: string, process: string): string => `controls-accepted.${process}.${prefix.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`;

export function controlMemory(path: string, log: Logger): ControlMemory {
  const file = stateFile(path, File, 'the accepted control records', log);
  return {
    load: () => new Map<string, Known>(Object.entries(file.read() ?? {})),
    save: (known) => file.write(Object.fromEntries(known)),
  };
}
