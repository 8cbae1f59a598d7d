import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { ParkedError, type StepGate } from '../../../../workers/engine/gate.ts';
import { planWithCommands, type PlanViewStep } from '../../../../workers/engine/planned-commands.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition, StepExecutor } from '../../../../workers/engine/runbook.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { NO_KUBE_WRITES } from '../../../../workers/kube-writes/kube-writes.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';

// A parked job's plan carries the exact argv its remaining steps would run (issue 23), found by
// simulating them against the dry-run host: nothing on the node changes while it is worked out.

type Step = PlannedStep & { map: string; file: string };
const steps: Step[] = [
  { id: 'probe', description: 'look', destructive: false, map: 'mpatha', file: '/w/probe' },
  {
    id: 'release',
    description: 'release queued I/O',
    destructive: true,
    risk: 'high',
    map: 'mpatha',
    file: '/w/release',
    evidence: [{ claim: 'every path is dead', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
  },
  {
    id: 'flush',
    description: 'flush the map',
    destructive: true,
    map: 'mpatha',
    file: '/w/flush',
    evidence: [{ claim: 'nothing holds it', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
  },
];
const executor: StepExecutor<Step> = {
  isDone: async (s, h) => (await h.readFile(s.file)) !== null,
  async apply(s, h) {
    if (s.id === 'release') await h.run(['dmsetup', 'message', s.map, '0', 'fail_if_no_path']);
    if (s.id === 'flush') {
      // A check that needs the earlier step's effect, as real runbooks have.
      if ((await h.readFile('/w/release')) === null) throw new Error('mpatha still queues I/O');
      await h.run(['multipath', '-f', s.map]);
    }
    await h.writeFile(s.file, 'done');
  },
};

describe('planned argv of a parked job', () => {
  it('lists the commands of the waiting step and the ones after it, and changes nothing on the node', async () => {
    const host = new FakeHost().on(['dmsetup'], { exitCode: 0 });
    const view = await planWithCommands({ summary: 's', steps }, 1, executor, { host, kube: NO_KUBE_WRITES });
    const shown = view.steps as PlanViewStep[];
    expect(shown[0]?.plannedArgv).toBeUndefined();
    expect(shown[1]?.plannedArgv).toEqual([
      ['dmsetup', 'message', 'mpatha', '0', 'fail_if_no_path'],
      ['host:write-file', '/w/release', '4 bytes'],
    ]);
    expect(shown[1]?.plannedNote).toBeUndefined();
    // The flush's own check wants the release done: its argv is not known yet, and it says why.
    expect(shown[2]?.plannedArgv).toEqual([]);
    expect(shown[2]?.plannedNote).toMatch(/depend on earlier steps.*mpatha still queues I\/O/);
    expect(host.commands).toEqual([]);
    expect(await host.readFile('/w/release')).toBeNull();
  });

  it('gives up on a step that hangs, within the budget, and says so', async () => {
    const hanging: StepExecutor<Step> = { isDone: async () => false, apply: () => new Promise(() => {}) };
    const started = Date.now();
    const view = await planWithCommands({ summary: 's', steps }, 0, hanging, { host: new FakeHost(), kube: NO_KUBE_WRITES }, 100);
    // The step never returns: without the 100 ms budget this would wait forever. The bound is loose
    // on purpose (a loaded 2-CPU CI machine once took over 1 s to get back to this line).
    expect(Date.now() - started).toBeLessThan(4_000);
    expect((view.steps as PlanViewStep[]).map((s) => s.plannedNote?.replace(/:.*/, ''))).toEqual([
      'commands after this point depend on earlier steps or the node',
      'not simulated',
      'not simulated',
    ]);
  });

  it('is what the engine puts in the plan of a job parked by the gate', async () => {
    const job: ResidualMultipathJob = {
      version: 1,
      key: 'residual_argv_0123456789ab',
      runbook: 'residual-multipath-cleanup',
      target: { node: 'worker-1' },
      evidence: [{ source: 'api', summary: 'test', raw: {} }],
    };
    const def: RunbookDefinition<'residual-multipath-cleanup', null, Step> = {
      runbook: 'residual-multipath-cleanup',
      observe: async () => null,
      plan: () => ({ kind: 'steps', summary: 'three', steps }),
      steps: executor,
      verify: async () => ({ ok: true, checks: [] }),
    };
    const gate: StepGate = {
      beforeStep: async (s) => (s.id === 'release' ? { go: false, park: { reason: 'approval', why: 'a human' } } : { go: true }),
    };
    const ctx: RunbookContext = {
      jobId: job.key,
      attempt: 1,
      mode: 'enforce',
      ranOn: 'worker-1',
      log: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      gate,
    };
    const host = new FakeHost();
    const err = await runRunbook(def, job, ctx, { host, stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParkedError);
    const planned = (err as ParkedError).plan.steps as PlanViewStep[];
    expect(planned.map((s) => s.id)).toEqual(['probe', 'release', 'flush']);
    expect(planned[1]?.plannedArgv?.[0]).toEqual(['dmsetup', 'message', 'mpatha', '0', 'fail_if_no_path']);
    expect(host.commands).toEqual([]);
  });
});
