import { modeOf } from '../../src/core/config/load.ts';
import { ReceiverBreakers } from '../engine/receiver-breakers.ts';
import { keepFor } from '../../src/core/catalogue/policy.ts';
import type { NodeAgentConfig } from '../../src/core/config/schema.ts';
import { jobNode } from '../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { redisTarget } from '../../src/adapters/redis/redis-target.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { createRunbookWorker, type RunbookWorker } from '../engine/runbook-worker.ts';
import { controlsFromConfig } from '../engine/job-controls.ts';
import { NODE_MODE_LABEL } from '../../src/core/controls/effective-mode.ts';
import type { NodeLabels } from '../runbooks/local-pv-placeholder/node-labels.ts';
import type { RunbookRegistry } from '../engine/registry.ts';
import type { JobEventSink } from '../engine/job-event-sink.ts';
import { seenWork } from '../engine/seen-work.ts';
import { controlMemory, controlMemoryFile } from '../engine/control-memory.ts';
import { trustFromConfig, type Trust } from '../../src/core/trust/from-config.ts';
import type { EnrolledKeys } from '../engine/enrolled-keys.ts';
import { join } from 'node:path';

// The node agent: one per node (a DaemonSet pod), consuming only its own node's queue, one job
// at a time, so two runbooks never change the same node's devices at once.

export interface NodeAgentOptions {
  config: NodeAgentConfig;
  registry: RunbookRegistry;
  log: Logger;
  /** Where the node's labels come from (`volume-medic.io/mode=dry-run` holds this agent to dry-run); default NODE_LABELS. */
  nodeLabels?: NodeLabels;
  /** Kubernetes Events for each job's start and result (cluster access only). */
  events?: JobEventSink;
  /** ENROL_URL: the keys of this node's queue from enrolment, instead of SIGNING_KEYS_DIR. */
  enrolled?: EnrolledKeys;
}

export interface NodeAgent extends RunbookWorker {
  /** The agent's keys: it verifies what it runs and seals what its own checks ask for. */
  trust: Trust;
}

export function createNodeAgent({ config, registry, log, nodeLabels, events, enrolled }: NodeAgentOptions): NodeAgent {
  const node = config.nodeName;
  if (!node) throw new Error('NODE_NAME is required: the node agent must know which node it serves');
  const trust = trustFromConfig(config, 'node-agent', enrolled);
  if (trust.allowUnsigned) log.warn('ALLOW_UNSIGNED_WORK=true: this agent runs work without a seal; anyone who can write to Redis can make it act');
  // With ENROL_URL the receiver takes this node's breaker slots (its own Redis user may not write them).
  const breakers =
    config.enrolUrl && trust.sealer
      ? new ReceiverBreakers({
          url: config.enrolUrl,
          ...(config.enrolCaFile ? { caFile: config.enrolCaFile } : {}),
          queue: nodeQueueName(node),
          sealer: trust.sealer,
        })
      : undefined;
  const worker = createRunbookWorker({
    queue: nodeQueueName(node),
    redis: redisTarget(config),
    prefix: config.queuePrefix,
    ranOn: node,
    process: `node-agent.${node}`,
    registry,
    modeOf: (runbook) => modeOf(config, runbook),
    accepts: (job) => {
      const target = jobNode(job);
      return target === node ? undefined : `job for node ${target ?? '(none)'} reached the agent of ${node}`;
    },
    lockDurationMs: config.lockDurationMs,
    // Its queue, statistics, presence, approvals, audit and copy of the controls share its queue's
    // slot; with ENROL_URL the receiver takes its breaker slots, so on a Cluster it needs that slot's master only.
    oneSlot: breakers !== undefined,
    keepFinished: keepFor(config.dedupWindowMs.node),
    log,
    controls: {
      ...controlsFromConfig(config),
      ...(breakers ? { breakers } : {}),
      node,
      nodeModeLabel: async () => (nodeLabels ? (await nodeLabels.labelsOf(node))?.[NODE_MODE_LABEL] : config.nodeLabels?.[NODE_MODE_LABEL]),
    },
    ...(events ? { events } : {}),
    // Its Redis user removed (its Node object deleted and made again): enrolment puts it back.
    ...(enrolled ? { onRedisAuthRefused: () => enrolled.renewSoon() } : {}),
    trust: {
      ring: trust.ring,
      controlRing: trust.controls.ring,
      allowUnsigned: trust.allowUnsigned,
      seen: seenWork(join(config.stateDir, 'seen-work.json'), log),
      controls: controlMemory(join(config.stateDir, controlMemoryFile(config.queuePrefix, 'node-agent')), log),
      ...(enrolled ? { onUnknownKey: () => enrolled.renewSoon() } : {}),
      ...(trust.sealer ? { auditSealer: trust.sealer } : {}),
    },
  });
  return Object.assign(worker, { trust });
}
