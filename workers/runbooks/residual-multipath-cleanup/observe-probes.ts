import type { Host } from '../../host/host.ts';
import { processFacts } from '../../host/proc-facts.ts';
import type { MapFacts, Opener } from './facts.ts';
import { cheapEvidence } from './map-evidence.ts';
import { acrossBoot, recordSightings, writeObservations, type readObservations } from './observations.ts';
import type { ResidualPolicy } from './policy.ts';
import { probeMaps } from './probe.ts';
import { normalizeWwid } from './wwid.ts';

// observe.ts's last stage on the dead maps: the read probe of those that pass every cheaper
// interlock, and this job recorded as one more sighting of them (with our probes left stuck).

/**
 * Probes the dead maps that pass every cheaper interlock (one read each, with a hard deadline);
 * a probe that survived SIGKILL is one of the map's openers from now on. Returns those.
 */
export async function probeDead(
  host: Host,
  dead: MapFacts[],
  ctx: Parameters<typeof cheapEvidence>[1],
  deps: { policy: ResidualPolicy; dryRun: boolean },
): Promise<Array<{ pid: number; startTime: string | null; dm: string }>> {
  const { policy } = deps;
  const candidates: MapFacts[] = [];
  for (const m of dead) {
    const blocked = cheapEvidence(m, ctx, policy).filter((e) => e.status !== 'holds');
    const earlier = m.openers.filter((o) => o.ownProbe);
    if (blocked.length) {
      m.probe = {
        outcome: 'not-run',
        durationMs: 0,
        exitCode: null,
        stuckPids: [],
        detail: `not probed: held by ${blocked.length} cheaper interlock(s) above`,
      };
    } else if (earlier.length) {
      // Our earlier probe is still stuck on it: reads hang. Another probe would only add one more process in D state.
      m.probe = {
        outcome: 'timed-out',
        durationMs: 0,
        exitCode: null,
        stuckPids: earlier.map((o) => o.pid),
        detail: `not probed again: our earlier probe(s) ${earlier.map((o) => o.pid).join(', ')} are still stuck on it`,
      };
    } else if (deps.dryRun && m.queueIfNoPath) {
      m.probe = {
        outcome: 'skipped-dry-run',
        durationMs: 0,
        exitCode: null,
        stuckPids: [],
        detail: 'dry-run: the map queues I/O (queue_if_no_path), so a read probe would hang in D state; enforce probes it first',
      };
    } else candidates.push(m);
  }
  const probes = await probeMaps(
    host,
    candidates.map((m) => m.dm as string),
    policy.probeTimeoutMs,
  );
  const stuckNow: Array<{ pid: number; startTime: string | null; dm: string }> = [];
  for (const m of candidates) {
    const p = probes.get(m.dm as string);
    if (!p) continue;
    m.probe = p;
    // A probe that survived SIGKILL holds the map open from now on: one of our own victims.
    for (const pid of p.stuckPids) {
      const who = await processFacts(host, pid);
      m.openers.push({ ...who, fds: 1, ownProbe: true });
      stuckNow.push({ pid, startTime: who.startTime, dm: m.dm as string });
    }
  }

  return stuckNow;
}

/** This job is one more observation of the dead maps (a map with a live path starts over); our stuck probes are remembered. */
export async function recordDead(
  host: Host,
  deps: { now: () => Date; dryRun: boolean; stateDir: string },
  before: Awaited<ReturnType<typeof readObservations>>['observations'],
  dead: MapFacts[],
  openers: Map<string, Opener[]>,
  stuckNow: Array<{ pid: number; startTime: string | null; dm: string }>,
  bootId: string | null,
): Promise<void> {
  const now = deps.now().toISOString();
  const counted = recordSightings(
    before,
    dead.map((m) => normalizeWwid(m.wwid)),
    now,
    bootId,
  );
  const alive = new Set([...openers.values()].flat().map((o) => o.pid));
  counted.stuckProbes = [
    ...before.stuckProbes.filter((p) => p.bootId === bootId && alive.has(p.pid)),
    ...stuckNow.map((p) => ({ ...p, at: now, bootId })),
  ].slice(-256);
  for (const m of dead) {
    const s = counted.deadMaps[normalizeWwid(m.wwid)];
    if (s) m.deadSince = { since: s.since, samples: s.samples, acrossBoot: acrossBoot(s, bootId) };
  }
  // Dry-run changes nothing on the node, its own bookkeeping included: each dry-run is a first look.
  if (!deps.dryRun && JSON.stringify(counted) !== JSON.stringify(before)) await writeObservations(host, deps.stateDir, counted);
}
