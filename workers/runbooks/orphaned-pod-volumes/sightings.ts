import { posix } from 'node:path';
import { parseJson } from '../../../src/core/controls/records.ts';
import { z } from '../../../src/core/zod.ts';
import type { Host } from '../../host/host.ts';
import { writeJsonFile } from '../../host/json-file.ts';

// When this agent first saw each orphan, and how often since (its scans and its jobs): an orphan
// is acted on only once seen in two looks ORPHAN_MIN_AGE_SECONDS apart (a pod being torn down
// right now looks exactly like an orphan for a moment). Kept in the agent's state directory.

const Sighting = z.object({ since: z.string(), last: z.string(), samples: z.number().check(z.int(), z.gte(1)) });
export type Sighting = z.infer<typeof Sighting>;

const File = z.object({ version: z.literal(1), uids: z.record(z.string(), Sighting) });
type SightingsFile = z.infer<typeof File>;

export const sightingsPath = (stateDir: string): string => posix.join(stateDir, 'observations', 'orphaned-pod-volumes.json');

async function readSightings(host: Host, stateDir: string): Promise<Record<string, Sighting>> {
  // Missing or unreadable: start over (fewer samples only delays).
  return parseJson(File, await host.readFile(sightingsPath(stateDir)).catch(() => null))?.uids ?? {};
}

/**
 * Counts one look. `orphans`: the UIDs that look orphaned now; with `complete` (a scan of all of
 * pods/) every other UID is forgotten, so one that stopped looking orphaned starts from zero.
 */
export async function recordSightings(
  host: Host,
  stateDir: string,
  orphans: readonly string[],
  now: string,
  complete: boolean,
): Promise<Record<string, Sighting>> {
  const before = await readSightings(host, stateDir);
  const uids: Record<string, Sighting> = complete ? {} : { ...before };
  for (const uid of orphans) {
    const s = before[uid];
    uids[uid] = s ? { ...s, last: now, samples: s.samples + 1 } : { since: now, last: now, samples: 1 };
  }
  const file: SightingsFile = { version: 1, uids };
  await writeJsonFile(host, sightingsPath(stateDir), file);
  return uids;
}
