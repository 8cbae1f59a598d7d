import { posix } from 'node:path';
import { isKernelDeviceName, isMapName } from '../../../src/core/catalogue/names.ts';
import { InvalidNameError } from '../../host/paths.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { describeFailure } from '../../host/command-failed.ts';
import type { Host } from '../../host/host.ts';
import { writeJsonFile } from '../../host/json-file.ts';
import { parseJson } from '../../../src/core/controls/records.ts';
import { parseMultipathLl, pathsOf } from '../residual-multipath-cleanup/multipath-ll.ts';
import type { MultipathPath } from '../residual-multipath-cleanup/multipath-ll.ts';
import type { ProbeFacts } from '../residual-multipath-cleanup/facts.ts';
import { probeOutcome } from '../residual-multipath-cleanup/probe.ts';
import { z } from '../../../src/core/zod.ts';
import type { DeviceHealth, HealthySighting } from './facts.ts';

// Is the device healthy again (docs/decisions/0008 §3.3)? A multipath map: every path `active ready
// running` in `multipath -ll <map>`; and for any device, one direct read answers within the probe's
// deadline (the residual-map probe: its own process group, killed at the deadline, a survivor in D
// state reported and never waited for). "Healthy for a while" is this agent's sightings over its jobs
// (observations/readonly-filesystem.json): one look is not a verdict.

/** `/dev/<dev>` for a name the kernel-device pattern accepts (dm-N, sdX, nvmeNnN[pP], rbdN, vdX). */
export function kernelDevPath(dev: string): string {
  if (!isKernelDeviceName(dev)) throw new InvalidNameError(`not a kernel block device name: ${JSON.stringify(dev)}`);
  return `/dev/${dev}`;
}

/** One direct 1 MiB read into /dev/null: the residual-map probe's shape, for any kernel device. */
const directReadArgv = (host: Host, dev: string): string[] => [
  'dd',
  `if=${host.argPath(kernelDevPath(dev))}`,
  'of=/dev/null',
  'count=1',
  'bs=1M',
  'iflag=direct',
];

export const isActivePath = (p: MultipathPath): boolean => p.dmState === 'active' && p.checkerState === 'ready' && (p.onlineState ?? 'running') === 'running';

const readTrimmed = async (host: Host, path: string): Promise<string | null> => (await host.readFile(path).catch(() => null))?.trim() ?? null;

export async function deviceHealth(host: Host, dev: string, timeoutMs: number): Promise<DeviceHealth> {
  if (!dev.startsWith('dm-')) return { kind: 'single' };
  const uuid = await readTrimmed(host, posix.join('/sys/block', dev, 'dm/uuid'));
  if (uuid === null) return { kind: 'unknown', why: `/sys/block/${dev}/dm/uuid is unreadable` };
  if (!uuid.startsWith('mpath-')) return { kind: 'single' };
  const name = await readTrimmed(host, posix.join('/sys/block', dev, 'dm/name'));
  if (!name || !isMapName(name)) return { kind: 'unknown', why: `/sys/block/${dev}/dm/name does not give a map name` };
  const r = await host.run(['multipath', '-ll', name], { timeoutMs });
  if (wasSimulated(r) || r.exitCode !== 0 || r.timedOut) return { kind: 'unknown', why: wasSimulated(r) ? 'multipath -ll was not run' : describeFailure(r) };
  const map = parseMultipathLl(r.stdout).maps.find((m) => m.name === name || m.dm === dev);
  if (!map) return { kind: 'unknown', why: `multipath -ll ${name} did not list the map` };
  if (map.problems.length) return { kind: 'unknown', why: `multipath -ll ${name} printed lines it could not place: ${map.problems.slice(0, 2).join(' | ')}` };
  return { kind: 'multipath', map: name, paths: pathsOf(map) };
}

/** Probe only a device whose paths are all back: a read of a map that queues I/O would hang in D state. */
export async function probeDevice(host: Host, dev: string, health: DeviceHealth, timeoutMs: number): Promise<ProbeFacts> {
  const notRun = (detail: string): ProbeFacts => ({ outcome: 'not-run', durationMs: 0, exitCode: null, stuckPids: [], detail });
  if (health.kind === 'unknown') return notRun('not read: the paths of the device are unknown');
  if (health.kind === 'multipath' && (health.paths.length === 0 || !health.paths.every(isActivePath))) return notRun('not read: a path is not active');
  return probeOutcome(await host.run(directReadArgv(host, dev), { timeoutMs }));
}

const Sighting = z.object({
  since: z.string(),
  samples: z.number().check(z.int(), z.gte(1)),
  bootId: z.nullable(z.string()),
  majorMinor: z.nullable(z.string()),
});
const SightingFile = z.object({ version: z.literal(1), healthy: z.record(z.string(), Sighting) });
type SightingFile = z.infer<typeof SightingFile>;

const sightingsPath = (stateDir: string): string => posix.join(stateDir, 'observations', 'readonly-filesystem.json');

async function readSightings(host: Host, stateDir: string): Promise<SightingFile> {
  // Missing or unreadable: start over (fewer samples: safer).
  return parseJson(SightingFile, await host.readFile(sightingsPath(stateDir)).catch(() => null)) ?? { version: 1, healthy: {} };
}

/**
 * Counts this observation: a healthy device keeps its first sighting (same boot, same device
 * instance) and gains a sample; an unhealthy one is forgotten, so a flap starts from zero.
 */
export async function recordHealth(
  host: Host,
  stateDir: string,
  seen: ReadonlyArray<{ dev: string; majorMinor: string | null; healthy: boolean }>,
  now: string,
  bootId: string | null,
): Promise<Map<string, HealthySighting>> {
  const file = await readSightings(host, stateDir);
  const healthy: SightingFile['healthy'] = { ...file.healthy };
  for (const s of seen) {
    delete healthy[s.dev];
    if (!s.healthy) continue;
    const before = file.healthy[s.dev];
    const same = before && before.bootId === bootId && before.majorMinor === s.majorMinor;
    healthy[s.dev] = same ? { ...before, samples: before.samples + 1 } : { since: now, samples: 1, bootId, majorMinor: s.majorMinor };
  }
  await writeJsonFile(host, sightingsPath(stateDir), { version: 1, healthy });
  return new Map(
    seen.flatMap((s) => {
      const h = healthy[s.dev];
      return h ? [[s.dev, { since: h.since, samples: h.samples }] as const] : [];
    }),
  );
}
