import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../../../../src/core/catalogue/result.ts';
import { ParkedError } from '../../../../../workers/engine/gate.ts';
import { InMemoryAttachedVolumes } from '../../../../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../../../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { intentsDir } from '../../../../../workers/runbooks/residual-multipath-cleanup/intents.ts';
import { MultipathNode, wwidOf, type Crash, type MapSpec } from '../../../../testkit/multipath-node.ts';

// The safety invariant of issue 19 over generated host states (maps x paths x openers x mounts x
// holders x attachments x probe outcomes x crash points): no destructive command ever hits a map
// that has a live path, a mount, a holder, an opener that is not a known victim, a known
// attachment, reads fine, or whose attachments cannot be known; and whatever point the agent
// dies at, later jobs converge: every residual map and its disks are gone, everything else is
// exactly as it was, no intent record is left, and one more job changes nothing.

const STATE = '/var/lib/volume-medic';
const T0 = Date.UTC(2026, 11, 4);

/**
 * A map starts residual (every path dead, nothing on it, unreadable, not attached) and gets up to
 * two faults, each of which must keep it: a live path, a holder, a mount, a user opener (an
 * application in D or S state, on the host or in a pod, or a known system name inside a pod), a
 * VolumeAttachment, or a probe that reads. Uniform draws over every field would almost never make
 * the one-fault near misses that matter.
 */
const FAULTS = ['live-path', 'holder', 'mounted', 'user-d', 'user-d-host', 'user-s', 'victim-name-in-pod', 'attached', 'readable'] as const;
const mapSpec: fc.Arbitrary<MapSpec> = fc
  .record({
    paths: fc.integer({ min: 1, max: 3 }),
    queueing: fc.boolean(),
    victim: fc.boolean(),
    probe: fc.constantFrom<MapSpec['probe']>('hang', 'io-error'),
    faults: fc.uniqueArray(fc.constantFrom(...FAULTS), { maxLength: 2 }),
    livePathAt: fc.nat({ max: 2 }),
  })
  .map(({ paths, queueing, victim, probe, faults, livePathAt }) => {
    const has = (f: (typeof FAULTS)[number]): boolean => faults.includes(f);
    const user = faults.find((f): f is 'user-d' | 'user-d-host' | 'user-s' | 'victim-name-in-pod' => f.startsWith('user') || f === 'victim-name-in-pod');
    return {
      paths: Array.from({ length: paths }, (_, i) => !(has('live-path') && i === livePathAt % paths)),
      queueing,
      holder: has('holder'),
      mounted: has('mounted'),
      opener: user ?? (victim ? 'victim' : 'none'),
      attached: has('attached'),
      probe: has('readable') ? 'readable' : probe,
    };
  });

const scenario = fc.record({
  maps: fc.array(mapSpec, { minLength: 1, maxLength: 4 }),
  attachmentsKnown: fc.integer({ min: 0, max: 4 }).map((n) => n > 0),
  crash: fc.option(fc.record({ at: fc.nat({ max: 12 }), after: fc.boolean() }), { nil: null }),
});

/** A map the runbook may remove: every path dead, nothing on it, no user, not attached, unreadable, attachments known. */
function eligible(m: MapSpec, attachmentsKnown: boolean): boolean {
  return (
    attachmentsKnown &&
    m.paths.every((dead) => dead) &&
    !m.holder &&
    !m.mounted &&
    !m.attached &&
    m.probe !== 'readable' &&
    (m.opener === 'none' || m.opener === 'victim')
  );
}

async function runJob(node: MultipathNode, attached: InMemoryAttachedVolumes, clock: { t: number }, n: number): Promise<RunbookResult | Error> {
  const handler = createResidualMultipathCleanup({
    host: node,
    stateDir: STATE,
    attached,
    policy: { openCountWaitMs: 1_000 },
    now: () => new Date(T0 + clock.t),
    sleep: async (ms) => void (clock.t += ms),
  });
  const job: ResidualMultipathJob = {
    version: 1,
    key: `residual_sim_${n}`,
    runbook: 'residual-multipath-cleanup',
    target: { node: 'sim' },
    evidence: [{ source: 'api', summary: 'sim', raw: {} }],
  };
  for (let i = 0; ; i++) {
    try {
      return await handler(job, {
        jobId: job.key,
        attempt: 1,
        mode: 'enforce',
        ranOn: 'sim',
        log: pino({ level: 'silent' }),
        signal: new AbortController().signal,
      });
    } catch (err) {
      if (err instanceof ParkedError && err.parking.reason === 'evidence' && i < 4) {
        clock.t = (err.parking.until as Date).getTime() - T0;
        continue;
      }
      return err as Error;
    }
  }
}

const stats = { runs: 0, destructive: 0, crashed: 0 };

describe('the residual runbook over generated host states', () => {
  it('never acts on a map that is not residual, and converges from any crash point', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ maps, attachmentsKnown, crash }) => {
        const node = new MultipathNode(maps, { crash: crash as Crash | null });
        const attachedWwids = maps.flatMap((m, i) => (m.attached ? [wwidOf(i)] : []));
        const attached = attachmentsKnown ? new InMemoryAttachedVolumes({ sim: attachedWwids }) : new InMemoryAttachedVolumes({}, { known: false });
        const clock = { t: 0 };

        // Up to four jobs: the first may die at the crash point, later ones finish the work.
        for (let n = 1; n <= 4; n++) await runJob(node, attached, clock, n);

        // 1. Never a destructive command on a map that is not residual.
        for (const d of node.destructive) {
          expect(eligible(maps[d.map]!, attachmentsKnown), `${d.kind} ${d.target} on map ${d.map}: ${JSON.stringify(maps[d.map])}`).toBe(true);
        }
        // 2. Converged: residual maps and their disks gone; everything else untouched.
        node.maps.forEach((m, i) => {
          const gone = eligible(maps[i]!, attachmentsKnown);
          expect(node.has(m.dm), `map ${m.name} ${gone ? 'removed' : 'kept'}`).toBe(!gone);
          for (const d of m.disks) expect(node.has(d.dev), `disk ${d.dev} of ${m.name}`).toBe(!gone);
        });
        expect(await node.list(intentsDir(STATE))).toEqual([]);
        stats.runs++;
        stats.destructive += node.destructive.length;
        if (crash && node.crash === null) stats.crashed++;
        // 3. Stable: one more job changes nothing.
        const before = node.destructive.length;
        await runJob(node, attached, clock, 5);
        expect(node.destructive.length).toBe(before);
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 150) },
    );
    // The generator must reach the destructive path and the crash points, or the property says little.
    // Seeds are random: of 150 runs, 16 to 34 crash (twelve runs of the suite), so the bound is a
    // twentieth, not the tenth that 15 crashes once missed; a generator that stopped reaching the
    // crash points would still fail it.
    expect(stats.destructive).toBeGreaterThan(stats.runs);
    expect(stats.crashed).toBeGreaterThan(stats.runs / 20);
  }, 60_000);
});
