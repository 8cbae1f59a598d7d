import { jobNode, type RemediationJob } from './jobs.ts';
import { RUNBOOK_POLICY, type Placement } from './policy.ts';

// Queue names are part of the contract: the receiver puts a node's jobs on `vm-node-{<node>}` and
// only that node's agent (NODE_NAME) consumes it; the job seal binds this name. Node names are
// RFC 1123 subdomains, so the name never holds the ':' BullMQ forbids.
//
// The braces are a Redis Cluster hash tag (BullMQ's "wrap the queue name" scheme): every key of a
// queue (`<prefix>:vm-node-{<node>}:wait`, `...:<jobId>`, ...) hashes by the node's name alone, so
// each of BullMQ's scripts touches one slot, and the fleet's queues spread over the masters. The
// names still start with `vm-node-` (key patterns such as the node agents' ACL,
// `~<prefix>:vm-node-*`, hold), and are the same on a single Redis and with Sentinel: one layout
// to reason about.

export const CLUSTER_QUEUE = 'vm-cluster-{cluster}';
const NODE_QUEUE = /^vm-node-\{(.+)\}$/;

export const nodeQueueName = (node: string): string => `vm-node-{${node}}`;

export function queueFor(job: RemediationJob): string {
  if (RUNBOOK_POLICY[job.runbook].placement === 'cluster') return CLUSTER_QUEUE;
  const node = jobNode(job);
  if (!node) throw new Error(`${job.runbook} runs on a node but the job names none`);
  return nodeQueueName(node);
}

export const nodeOfQueue = (queue: string): string | undefined => NODE_QUEUE.exec(queue)?.[1];

/**
 * The node a stored job is shown under. A node queue's jobs are its node's whatever their record
 * says: the queue decides which agent takes them, and that node's own Redis user may rewrite the
 * records in it, so a job in node-a's queue that names node-b is node-a's, with `recordNames`
 * saying what the record claims. The cluster queue's jobs are listed under the node they concern
 * (an rbd job's pod's node), if any.
 */
export function nodeOfStoredJob(queue: string, job: RemediationJob | undefined): { node?: string; recordNames?: string } {
  const named = job ? jobNode(job) : undefined;
  const own = nodeOfQueue(queue);
  if (own === undefined) return named !== undefined ? { node: named } : {};
  return { node: own, ...(named !== undefined && named !== own ? { recordNames: named } : {}) };
}

/** Which placement's jobs a queue holds (the inverse of queueFor's choice). */
export const placementOfQueue = (queue: string): Placement => (queue === CLUSTER_QUEUE ? 'cluster' : 'node');
