import { describe, expect, it } from 'vitest';
import type { JobState, StoredJob } from '../../../../../src/core/jobs/job-store.ts';
import { cleanupJobsOf } from '../../../../../workers/runbooks/out-of-service-taint-release/cleanup-jobs.ts';

// The node half's results as the taint release reads them from the job store: only the node's
// residual-multipath-cleanup and rbd-unmap jobs, each with its boot, state and outcome; a result
// that does not parse gives no outcome (not clean), a refused job reads `refused`.

const stored = (id: string, o: Partial<StoredJob>): StoredJob => ({
  id,
  name: 'x',
  data: {},
  timestamp: 0,
  attemptsMade: 1,
  attemptsStarted: 1,
  attempts: 3,
  progress: 0,
  ...o,
});

describe('cleanupJobsOf', () => {
  it("reads the node's clean-up jobs with their boot, state and outcome", async () => {
    const jobs = new Map<string, [JobState, StoredJob]>([
      [
        'r1',
        [
          'completed',
          stored('r1', {
            data: { bootId: 'boot-new', seal: {} },
            finishedOn: Date.parse('2026-12-07T08:35:00Z'),
            returnvalue: { outcome: 'succeeded', summary: 'removed 2 maps' },
          }),
        ],
      ],
      ['u1', ['failed', stored('u1', { failedReason: 'RefusedError: refused: a pod still uses the image', finishedOn: 1 })]],
      ['r2', ['completed', stored('r2', { returnvalue: 'garbage' })]],
    ]);
    const read = cleanupJobsOf(
      {
        ofNode: async () => [
          { queue: 'vm-node-{worker-2}', id: 'r1', runbook: 'residual-multipath-cleanup' },
          { queue: 'vm-node-{worker-2}', id: 'u1', runbook: 'rbd-unmap' },
          { queue: 'vm-node-{worker-2}', id: 'r2', runbook: 'residual-multipath-cleanup' },
          { queue: 'vm-node-{worker-2}', id: 'o1', runbook: 'orphaned-pod-volumes' },
          { queue: 'vm-node-{worker-2}', id: 'gone', runbook: 'rbd-unmap' },
        ],
      },
      { state: async (_q, id) => jobs.get(id)?.[0] ?? 'unknown', get: async (_q, id) => jobs.get(id)?.[1] },
    );
    expect(await read('worker-2')).toEqual([
      {
        runbook: 'residual-multipath-cleanup',
        id: 'r1',
        state: 'completed',
        bootId: 'boot-new',
        finishedAt: '2026-12-07T08:35:00.000Z',
        outcome: 'succeeded',
        summary: 'removed 2 maps',
      },
      {
        runbook: 'rbd-unmap',
        id: 'u1',
        state: 'failed',
        finishedAt: new Date(1).toISOString(),
        outcome: 'refused',
        summary: 'RefusedError: refused: a pod still uses the image',
      },
      { runbook: 'residual-multipath-cleanup', id: 'r2', state: 'completed' },
    ]);
  });
});
