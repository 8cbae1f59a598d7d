import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import type { CoordinationAnswer } from '../../../../src/core/coordination/coordination.ts';
import { GO, ParkedError, type StepGate } from '../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';

// Where the engine asks coordination: before each destructive step it is about to apply, fresh
// each time, after the evidence and before the operator gate (a job that waits for kured takes no
// approval or breaker slot); never for a step that changes nothing, nor one already done.

type Step = PlannedStep & { file: string };
const job: ResidualMultipathJob = {
  version: 1,
  key: 'residual_coord_0123456789ab',
  runbook: 'residual-multipath-cleanup',
  target: { node: 'worker-1' },
  evidence: [{ source: 'api', summary: 'test', raw: {} }],
};
const held = (id: string): Step => ({
  id,
  description: id,
  destructive: true,
  file: `/w/${id}`,
  evidence: [{ claim: `${id} is ours`, source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
});
const steps: Step[] = [{ id: 'look', description: 'look', destructive: false, file: '/w/look' }, held('two'), held('three')];
const def: RunbookDefinition<'residual-multipath-cleanup', null, Step> = {
  runbook: 'residual-multipath-cleanup',
  observe: async () => null,
  plan: () => ({ kind: 'steps', summary: 'three files', steps }),
  steps: { isDone: async (s, h) => (await h.readFile(s.file)) !== null, apply: async (s, h) => h.writeFile(s.file, 'x') },
  verify: async () => ({ ok: true, checks: [] }),
};

function setup(answers: CoordinationAnswer[]) {
  const asked: string[] = [];
  const gated: string[] = [];
  const gate: StepGate = {
    async beforeStep(step) {
      gated.push(step.id);
      return GO;
    },
  };
  const ctx: RunbookContext = {
    jobId: job.key,
    attempt: 1,
    mode: 'enforce',
    ranOn: 'worker-1',
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    gate,
    coordination: {
      check: {
        busy: async (node) => {
          asked.push(node);
          return answers.shift() ?? { busy: false };
        },
      },
      recheckMs: 30_000,
    },
  };
  return { asked, gated, ctx };
}

describe('coordination in the engine', () => {
  it('is asked for each destructive step, with the job target node, and not for a step that changes nothing', async () => {
    const { asked, gated, ctx } = setup([]);
    const result = await runRunbook(def, job, ctx, { host: new FakeHost(), stateDir: '/state' });
    expect(result.outcome).toBe('succeeded');
    expect(asked).toEqual(['worker-1', 'worker-1']);
    expect(gated).toEqual(['look', 'two', 'three']);
  });

  it('parks before the operator gate, and asks again fresh for the next step once it goes on', async () => {
    const host = new FakeHost();
    const first = setup([{ busy: false }, { busy: true, who: 'medik8s', why: 'SelfNodeRemediation medik8s/worker-1 remediates worker-1' }]);
    const err = await runRunbook(def, job, first.ctx, { host, stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParkedError);
    expect((err as ParkedError).parking.reason).toBe('coordination');
    // 'two' ran; 'three' waits, and the gate was not asked for it.
    expect(first.gated).toEqual(['look', 'two']);
    expect(await host.readFile('/w/three')).toBeNull();
    expect((err as ParkedError).result.steps.map((s) => s.id)).toEqual(['look', 'two']);

    const again = setup([]);
    expect((await runRunbook(def, job, again.ctx, { host, stateDir: '/state' })).outcome).toBe('succeeded');
    // Done steps are skipped by the journal: only 'three' asks.
    expect(again.asked).toEqual(['worker-1']);
  });
});
