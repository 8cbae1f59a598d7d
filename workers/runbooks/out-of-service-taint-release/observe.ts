import type { OutOfServiceTaintReleaseJob } from '../../../src/core/catalogue/jobs.ts';
import type { CleanupJobFact, OurBlocklistEntry, TaintReleaseFacts } from './facts.ts';
import {
  type KubeGet,
  read,
  readAttachments,
  readLeaseRenewTime,
  readNetworkFence,
  readNode,
  readRebooted,
  readRemediators,
  readTerminatingPods,
} from './reads.ts';

// Observe: API reads only (no host command here), plus the node half's results from the job
// store and our own blocklist entries. Every read runs and is recorded; a failed one is a
// `missing` fact that plan() turns into a named refusal.

export interface ObserveDeps {
  get: KubeGet;
  /** residual-multipath-cleanup and rbd-unmap jobs stored for the node, with their results. */
  cleanupJobs(node: string): Promise<CleanupJobFact[]>;
  /** Our `ceph osd blocklist add` entries of the node (undo records), each with whether Ceph still lists it. */
  ourBlocklist(node: string): Promise<OurBlocklistEntry[]>;
  readyGraceSeconds: number;
  now: () => Date;
}

export async function observe(job: OutOfServiceTaintReleaseJob, deps: ObserveDeps): Promise<TaintReleaseFacts> {
  const node = job.target.node;
  const observedAt = deps.now().toISOString();
  const [nodeState, leaseRenewTime, rebooted, volumeAttachments, terminatingPods, remediators, networkFence, cleanupJobs, ourBlocklist] = await Promise.all([
    read(() => readNode(deps.get, node)),
    read(() => readLeaseRenewTime(deps.get, node)),
    read(() => readRebooted(deps.get, node)),
    read(() => readAttachments(deps.get, node)),
    read(() => readTerminatingPods(deps.get, node)),
    readRemediators(deps.get, node),
    readNetworkFence(deps.get, node),
    read(() => deps.cleanupJobs(node)),
    read(() => deps.ourBlocklist(node)),
  ]);
  return {
    node,
    observedAt,
    nodeState,
    leaseRenewTime,
    rebooted,
    volumeAttachments,
    terminatingPods,
    remediators,
    networkFence,
    cleanupJobs,
    ourBlocklist,
    readyGraceSeconds: deps.readyGraceSeconds,
  };
}
