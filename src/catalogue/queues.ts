import { jobNode, type RemediationJob } from './jobs.ts';
import { RUNBOOK_POLICY } from './policy.ts';

// Queue names are part of the contract: the receiver puts a node's jobs on `vm-node-<node>` and
// only that node's agent (NODE_NAME) consumes it. Node names are RFC 1123 subdomains, so the name
// never holds the ':' BullMQ forbids.

export const CLUSTER_QUEUE = 'vm-cluster';
const NODE_QUEUE_PREFIX = 'vm-node-';

export const nodeQueueName = (node: string): string => `${NODE_QUEUE_PREFIX}${node}`;

export function queueFor(job: RemediationJob): string {
  if (RUNBOOK_POLICY[job.runbook].placement === 'cluster') return CLUSTER_QUEUE;
  const node = jobNode(job);
  if (!node) throw new Error(`${job.runbook} runs on a node but the job names none`);
  return nodeQueueName(node);
}

export const nodeOfQueue = (queue: string): string | undefined =>
  queue.startsWith(NODE_QUEUE_PREFIX) ? queue.slice(NODE_QUEUE_PREFIX.length) : undefined;
