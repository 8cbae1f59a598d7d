import { modeOf } from '../../src/config/load.ts';
import type { Config } from '../../src/config/schema.ts';
import { jobNode } from '../../src/catalogue/jobs.ts';
import { nodeQueueName } from '../../src/catalogue/queues.ts';
import type { Logger } from '../../src/observability/logger.ts';
import { createRunbookWorker, type RunbookWorker } from '../engine/runbook-worker.ts';
import { controlsFromConfig } from '../engine/job-controls.ts';
import { NODE_MODE_LABEL } from '../../src/controls/effective-mode.ts';
import type { NodeLabels } from '../runbooks/local-pv-placeholder/node-labels.ts';
import type { RunbookRegistry } from '../runbooks/registry.ts';
import type { JobEventSink } from '../engine/job-events.ts';

// The node agent: one per node (a DaemonSet pod), consuming only its own node's queue, one job
// at a time, so two runbooks never change the same node's devices at once.

export interface NodeAgentOptions {
  config: Config;
  registry: RunbookRegistry;
  log: Logger;
  /** Where the node's labels come from (`volume-medic.io/mode=dry-run` holds this agent to dry-run); default NODE_LABELS. */
  nodeLabels?: NodeLabels;
  /** Kubernetes Events for each job's start and result (cluster access only). */
  events?: JobEventSink;
}

export function createNodeAgent({ config, registry, log, nodeLabels, events }: NodeAgentOptions): RunbookWorker {
  const node = config.nodeName;
  if (!node) throw new Error('NODE_NAME is required: the node agent must know which node it serves');
  return createRunbookWorker({
    queue: nodeQueueName(node),
    redisUrl: config.redisUrl,
    prefix: config.queuePrefix,
    ranOn: node,
    registry,
    modeOf: (runbook) => modeOf(config, runbook),
    accepts: (job) => {
      const target = jobNode(job);
      return target === node ? undefined : `job for node ${target ?? '(none)'} reached the agent of ${node}`;
    },
    lockDurationMs: config.lockDurationMs,
    log,
    controls: {
      ...controlsFromConfig(config),
      node,
      nodeModeLabel: async () => (nodeLabels ? (await nodeLabels.labelsOf(node))?.[NODE_MODE_LABEL] : config.nodeLabels?.[NODE_MODE_LABEL]),
    },
    ...(events ? { events } : {}),
  });
}
