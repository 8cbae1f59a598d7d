import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { GO, ParkedError, type GateDecision, type StepGate } from '../../../../workers/engine/gate.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';

// The engine asks the gate before each step it is about to apply, and only then.

type Step = PlannedStep & { file: string };
const job: ResidualMultipathJob = {
  version: 1,
  key: 'residual_gate_0123456789ab',
  runbook: 'residual-multipath-cleanup',
  target: { node: 'worker-1' },
  evidence: [{ source: 'api', summary: 'test', raw: {} }],
};
const steps: Step[] = [
  { id: 'one', description: 'one', destructive: false, file: '/w/one' },
  {
    id: 'two',
    description: 'two',
    destructive: true,
    risk: 'high',
    file: '/w/two',
    evidence: [{ claim: 'two is ours', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
  },
  {
    id: 'three',
    description: 'three',
    destructive: true,
    file: '/w/three',
    evidence: [{ claim: 'three is ours', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
  },
];
const def: RunbookDefinition<'residual-multipath-cleanup', null, Step> = {
  runbook: 'residual-multipath-cleanup',
  observe: async () => null,
  plan: () => ({ kind: 'steps', summary: 'three files', steps }),
  steps: { isDone: async (s, h) => (await h.readFile(s.file)) !== null, apply: async (s, h) => h.writeFile(s.file, 'x') },
  verify: async () => ({ ok: true, checks: [] }),
};

function recordingGate(answer: (step: PlannedStep) => GateDecision | Error): StepGate & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async beforeStep(step) {
      asked.push(step.id);
      const a = answer(step);
      if (a instanceof Error) throw a;
      return a;
    },
  };
}
const ctx = (gate: StepGate): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode: 'enforce',
  ranOn: 'worker-1',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
  gate,
});

describe('the engine with a step gate', () => {
  it('parks before the gated step: earlier steps done, the result lists only those, and the plan travels with it', async () => {
    const host = new FakeHost();
    const gate = recordingGate((s) => (s.id === 'two' ? { go: false, park: { reason: 'approval', why: 'needs a human' } } : GO));
    const err = await runRunbook(def, job, ctx(gate), { host, stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParkedError);
    const parked = err as ParkedError;
    expect(parked.parking).toEqual({ reason: 'approval', why: 'needs a human' });
    expect(parked.result).toMatchObject({ outcome: 'waiting', mode: 'enforce' });
    expect(parked.result.steps.map((s) => `${s.id}:${s.status}`)).toEqual(['one:done']);
    expect(parked.plan.steps.map((s) => s.id)).toEqual(['one', 'two', 'three']);
    expect(await host.readFile('/w/two')).toBeNull();
  });

  it('does not ask about steps the journal or their own check says are done', async () => {
    const host = new FakeHost();
    await host.writeFile('/w/one', 'x');
    const gate = recordingGate(() => GO);
    const result = await runRunbook(def, job, ctx(gate), { host, stateDir: '/state' });
    expect(result.outcome).toBe('succeeded');
    expect(gate.asked).toEqual(['two', 'three']);
  });

  it('fails the job as refused when the gate refuses (a rejected approval), and the step never runs', async () => {
    const host = new FakeHost();
    const gate = recordingGate((s) => (s.id === 'two' ? new RefusedError(['approval rejected by erin: live LUN']) : GO));
    const err = await runRunbook(def, job, ctx(gate), { host, stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).result).toMatchObject({
      outcome: 'refused',
      refusals: ['approval rejected by erin: live LUN'],
      summary: expect.stringMatching(/^step two not run/),
    });
    expect(await host.readFile('/w/two')).toBeNull();
  });
});
