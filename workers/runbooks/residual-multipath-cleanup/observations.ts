import { posix } from 'node:path';
import { z } from '../../../src/core/zod.ts';
import type { Host } from '../../host/host.ts';
import { writeJsonFile } from '../../host/json-file.ts';

// What this agent saw of dead maps over time, on the host ("one sample is not a
// verdict"). Each job is one observation: a map whose every path is dead gets its first sighting
// kept, later sightings counted; a map with a live path (or gone) is forgotten, so a transient
// all-paths-down starts from zero next time. Also the read probes we left stuck in D state, so a
// later job knows them as ours (pid and start time) and not as a user of the map.

const Sighting = z.object({
  since: z.string(),
  last: z.string(),
  samples: z.number().check(z.int(), z.gte(1)),
  /** The boot (/proc/sys/kernel/random/boot_id) of the first sighting. */
  bootId: z.nullable(z.string()),
});
export type Sighting = z.infer<typeof Sighting>;

const StuckProbe = z.object({
  pid: z.number().check(z.int()),
  startTime: z.nullable(z.string()),
  dm: z.string(),
  at: z.string(),
  bootId: z.nullable(z.string()),
});

const ObservationFile = z.object({
  version: z.literal(1),
  /** By WWID. */
  deadMaps: z.record(z.string(), Sighting),
  stuckProbes: z.array(StuckProbe).check(z.maxLength(256)),
});
export type Observations = z.infer<typeof ObservationFile>;

const EMPTY: Observations = { version: 1, deadMaps: {}, stuckProbes: [] };

export const observationsPath = (stateDir: string): string => posix.join(stateDir, 'observations', 'residual-multipath.json');

/** The file, or empty when it does not exist; an unreadable file is reported and starts over (fewer samples: safer). */
export async function readObservations(host: Host, stateDir: string): Promise<{ observations: Observations; problem?: string }> {
  const text = await host.readFile(observationsPath(stateDir)).catch(() => null);
  if (text === null) return { observations: structuredClone(EMPTY) };
  try {
    const parsed = ObservationFile.safeParse(JSON.parse(text));
    if (parsed.success) return { observations: parsed.data };
    return { observations: structuredClone(EMPTY), problem: `${observationsPath(stateDir)} does not parse: started over` };
  } catch {
    return { observations: structuredClone(EMPTY), problem: `${observationsPath(stateDir)} is not JSON: started over` };
  }
}

export async function writeObservations(host: Host, stateDir: string, o: Observations): Promise<void> {
  await writeJsonFile(host, observationsPath(stateDir), o);
}

/**
 * This observation: `dead` are the WWIDs whose every path is dead now; every other map is
 * forgotten. Returns the sightings after counting this one.
 */
export function recordSightings(o: Observations, dead: readonly string[], now: string, bootId: string | null): Observations {
  const deadMaps: Record<string, Sighting> = {};
  for (const wwid of dead) {
    const before = o.deadMaps[wwid];
    deadMaps[wwid] = before ? { ...before, last: now, samples: before.samples + 1 } : { since: now, last: now, samples: 1, bootId };
  }
  return { ...o, deadMaps };
}

/** Whether the map was already dead in an earlier boot than this one. */
export const acrossBoot = (s: Sighting, bootId: string | null): boolean => s.bootId !== null && bootId !== null && s.bootId !== bootId;
