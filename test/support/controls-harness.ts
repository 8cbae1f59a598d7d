import type { Config } from '../../src/core/config/schema.ts';
import type { Plan, PlannedStep, RunbookDefinition } from '../../workers/engine/runbook.ts';
import { runRunbook } from '../../workers/engine/run-runbook.ts';
import { FakeHost } from '../testkit/fake-host.ts';
import type { RunbookRegistry } from '../../workers/engine/registry.ts';
import type { Redis } from 'ioredis';
import type { RemediationJob } from '../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { sealJob } from '../../src/core/trust/work.ts';
import { testSealer } from './trust.ts';
import { waitFor } from './wait.ts';
import { knownQueuesKey } from '../../src/adapters/redis/known-queues.ts';
import type { TestJob, TestJobs } from '../testkit/jobs.ts';
import { rawQueue } from './raw-jobs.ts';

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
  id,
  description: `toy ${id}`,
  destructive: true,
  file: `/w/${id}`,
  evidence: [{ claim: `${id} is safe to change`, source: 'toy', observedAt: new Date().toISOString(), status: 'holds' }],
  ...extra,
});

/** Parked jobs look again every 0.3 s; the storm breaker is off unless a test turns it on. */
export const fastControls: Partial<Config> = { controlsRecheckSeconds: 0.3, lockDurationMs: 5_000, breakerStormNodes: 0 };

/**
 * Puts jobs sealed by the receiver straight onto node queues and waits until each finished or
 * parked (the control tests' way to make an agent start a job): `run(node, until)`. The job is
 * written as BullMQ stores it with no retries of its own (not through the store, which would give
 * it its runbook's), and read back through the JobStore port (`jobs`). `redis`: the test's
 * connection, once its beforeAll made it.
 */
export function sealedJobs(
  jobs: () => TestJobs,
  redis: () => Redis,
  prefix: string,
  keyPrefix: string,
): (node: string, until?: 'finished' | 'parked') => Promise<TestJob & { queue: string }> {
  let n = 0;
  return async (node, until = 'finished') => {
    n += 1;
    const key = `${keyPrefix}-${n}`;
    const name = nodeQueueName(node);
    const job: RemediationJob = {
      version: 1,
      key,
      runbook: 'residual-multipath-cleanup',
      target: { node },
      evidence: [{ source: 'api', summary: 'test', raw: null }],
    };
    const queue = rawQueue(redis(), prefix, name);
    try {
      await queue.add(job.runbook, sealJob(testSealer('receiver'), name, job, 86_400_000), { jobId: key });
    } finally {
      await queue.close();
    }
    // As the receiver's dispatcher does: the readers of parked jobs, approvals and the audit trail
    // find a queue's records through the registry.
    await redis().sadd(knownQueuesKey(prefix), name);
    return waitFor(
      `job ${key} ${until}`,
      async () => {
        const j = await jobs().get(name, key);
        if (!j) return undefined;
        if (until === 'parked') return (j.progress as { parked?: unknown } | undefined)?.parked ? { ...j, queue: name } : undefined;
        return (j.finishedOn ?? 0) > 0 ? { ...j, queue: name } : undefined;
      },
      10_000,
    );
  };
}
