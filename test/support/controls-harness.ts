import type { Config } from '../../src/config/schema.ts';
import type { Plan, PlannedStep, RunbookDefinition } from '../../workers/engine/runbook.ts';
import { runRunbook } from '../../workers/engine/run-runbook.ts';
import { FakeHost } from '../../workers/host/fake-host.ts';
import type { RunbookRegistry } from '../../workers/runbooks/registry.ts';

// A toy residual-multipath-cleanup for control tests: its plan is whatever the test says, each
// step writes a file on a fake host, so "did the step run" is "does the file exist".

export type ToyStep = PlannedStep & { file: string };

export interface Toy {
  host: FakeHost;
  registry: RunbookRegistry;
  ran(file: string): Promise<boolean>;
}

export function toyRunbook(planFor: (node: string) => Plan<ToyStep>): Toy {
  const host = new FakeHost();
  const def = (node: string): RunbookDefinition<'residual-multipath-cleanup', null, ToyStep> => ({
    runbook: 'residual-multipath-cleanup',
    observe: async () => null,
    plan: () => planFor(node),
    steps: {
      isDone: async (s, h) => (await h.readFile(s.file)) !== null,
      apply: async (s, h) => h.writeFile(s.file, 'done'),
    },
    verify: async () => ({ ok: true, checks: [] }),
  });
  return {
    host,
    registry: { 'residual-multipath-cleanup': (job, ctx) => runRunbook(def(job.target.node), job, ctx, { host, stateDir: '/state' }) },
    ran: async (file) => (await host.readFile(file)) !== null,
  };
}

/** A destructive toy step with the positive evidence the engine requires of one, observed now. */
export const toyStep = (id: string, extra: Partial<ToyStep> = {}): ToyStep => ({
  id, description: `toy ${id}`, destructive: true, file: `/w/${id}`,
  evidence: [{ claim: `${id} is safe to change`, source: 'toy', observedAt: new Date().toISOString(), status: 'holds' }],
  ...extra,
});

/** Parked jobs look again every 0.3 s; the storm breaker is off unless a test turns it on. */
export const fastControls: Partial<Config> = { controlsRecheckSeconds: 0.3, lockDurationMs: 5_000, breakerStormNodes: 0 };
