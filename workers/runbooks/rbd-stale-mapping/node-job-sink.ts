import type { RbdUnmapJob } from '../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../src/core/catalogue/queues.ts';

// How the cluster half hands work to the watcher's node: one method, wired by the cluster worker
// to src/adapters/jobstore/dispatcher.ts (`Dispatcher.enqueue([job])`, which puts an `rbd-unmap` job on
// `vm-node-{<node>}` because its placement is `node`). The job id is the key, so a repeat folds.

export interface NodeJobSink {
  enqueue(job: RbdUnmapJob): Promise<{ queue: string; deduplicated: boolean }>;
}

export class InMemoryNodeJobSink implements NodeJobSink {
  readonly jobs: RbdUnmapJob[] = [];

  async enqueue(job: RbdUnmapJob): Promise<{ queue: string; deduplicated: boolean }> {
    const deduplicated = this.jobs.some((j) => j.key === job.key);
    if (!deduplicated) this.jobs.push(job);
    return { queue: nodeQueueName(job.target.node), deduplicated };
  }
}
