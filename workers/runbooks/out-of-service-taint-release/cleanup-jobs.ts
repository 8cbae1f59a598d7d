import type { JobReads } from '../../../src/core/jobs/job-store.ts';
import { z } from '../../../src/core/zod.ts';
import type { CleanupJobFact } from './facts.ts';

// The node half's results, as the job store holds them: the residual-multipath-cleanup and
// rbd-unmap jobs stored for the node (the console's index of incidents knows them by node), each
// with its state and outcome. Parsed, not trusted: a result that does not parse has no outcome,
// which the plan reads as "not clean".

const RUNBOOKS = new Set(['residual-multipath-cleanup', 'rbd-unmap']);
/** The newest jobs of the node looked at: enough for a node's few clean-ups of one boot. */
const MAX_JOBS = 50;

const Data = z.object({ bootId: z.optional(z.string()) });
const Result = z.object({ outcome: z.optional(z.string()), summary: z.optional(z.string()) });

export interface NodeIndex {
  ofNode(node: string, max: number): Promise<{ queue: string; id: string; runbook: string }[]>;
}

export function cleanupJobsOf(index: NodeIndex, jobs: Pick<JobReads, 'state' | 'get'>): (node: string) => Promise<CleanupJobFact[]> {
  return async (node) => {
    const entries = (await index.ofNode(node, MAX_JOBS)).filter((e) => RUNBOOKS.has(e.runbook));
    const found = await Promise.all(
      entries.map(async (e): Promise<CleanupJobFact | undefined> => {
        // State before the job: read the other way round, a job finishing in between shows as completed without its result.
        const state = await jobs.state(e.queue, e.id);
        const job = await jobs.get(e.queue, e.id);
        if (!job || state === 'unknown') return undefined;
        const data = Data.safeParse(job.data);
        const result = Result.safeParse(job.returnvalue);
        const outcome =
          state === 'failed' ? (job.failedReason?.startsWith('RefusedError') ? 'refused' : 'failed') : result.success ? result.data.outcome : undefined;
        const summary = state === 'failed' ? job.failedReason : result.success ? result.data.summary : undefined;
        return {
          runbook: e.runbook as CleanupJobFact['runbook'],
          id: e.id,
          state,
          ...(data.success && data.data.bootId ? { bootId: data.data.bootId } : {}),
          ...(job.finishedOn ? { finishedAt: new Date(job.finishedOn).toISOString() } : {}),
          ...(outcome ? { outcome } : {}),
          ...(summary ? { summary } : {}),
        };
      }),
    );
    return found.filter((f): f is CleanupJobFact => f !== undefined);
  };
}
