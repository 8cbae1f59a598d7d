import type { Agent } from 'node:http';
import { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { redisTarget } from '../../src/adapters/redis/redis-target.ts';
import { jobNode } from '../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import type { NodeAgentConfig } from '../../src/core/config/schema.ts';
import { NODE_MODE_LABEL } from '../../src/core/controls/effective-mode.ts';
import { trustFromConfig, type Trust } from '../../src/core/trust/from-config.ts';
import type { EnrolledKeys } from '../engine/enrolled-keys.ts';
import type { KubeRead } from '../../src/adapters/kube/kube-coordination.ts';
import type { JobEventSink } from '../engine/job-event-sink.ts';
import { ReceiverBreakers } from '../engine/receiver-breakers.ts';
import type { RunbookRegistry } from '../engine/registry.ts';
import { createAgentWorker, type RunbookWorker } from '../engine/runbook-worker.ts';
import type { NodeLabels } from '../runbooks/local-pv-placeholder/node-labels.ts';

// The node agent: one per node (a DaemonSet pod), consuming only its own node's queue, one job
// at a time, so two runbooks never change the same node's devices at once.

export interface NodeAgentOptions {
  config: NodeAgentConfig;
  registry: RunbookRegistry;
  log: Logger;
  /** Where the node's labels come from (`volume-medic.io/mode=dry-run` holds this agent to dry-run); default NODE_LABELS. */
  nodeLabels?: NodeLabels | undefined;
  /** Kubernetes Events for each job's start and result (cluster access only). */
  events?: JobEventSink | undefined;
  /** ENROL_URL: the keys of this node's queue from enrolment, instead of SIGNING_KEYS_DIR. */
  enrolled?: EnrolledKeys | undefined;
  /** GETs of the API server (cluster access only): coordination with kured, drains and medik8s. */
  kubeRead?: KubeRead | undefined;
  /** The connections to the receiver for breaker slots (default this process's: one process, one node; bench/fleet-paths.ts runs many). */
  receiverAgent?: Agent | undefined;
}

export interface NodeAgent extends RunbookWorker {
  /** The agent's keys: it verifies what it runs and seals what its own checks ask for. */
  trust: Trust;
}

export function createNodeAgent({ config, registry, log, nodeLabels, events, enrolled, kubeRead, receiverAgent }: NodeAgentOptions): NodeAgent {
  const node = config.nodeName;
  if (!node) throw new Error('NODE_NAME is required: the node agent must know which node it serves');
  const queue = nodeQueueName(node);
  const trust = trustFromConfig(config, 'node-agent', enrolled);
  // With ENROL_URL the receiver takes this node's breaker slots (its own Redis user may not write them).
  const breakers =
    config.enrolUrl && trust.sealer
      ? new ReceiverBreakers({
          url: config.enrolUrl,
          ...(config.enrolCaFile ? { caFile: config.enrolCaFile } : {}),
          queue,
          sealer: trust.sealer,
          ...(receiverAgent ? { agent: receiverAgent } : {}),
        })
      : undefined;
  const store = new AgentStore({
    redis: redisTarget(config),
    process: `node-agent.${node}`,
    prefix: config.queuePrefix,
    log,
    // Its Redis user removed (its Node object deleted and made again): enrolment puts it back.
    ...(enrolled ? { onAuthRefused: () => enrolled.renewSoon() } : {}),
    // Its queue, statistics, presence, approvals, audit and copy of the controls share its queue's
    // slot; with ENROL_URL the receiver takes its breaker slots, so on a Cluster it needs that slot's master only.
    ...(breakers ? { oneSlot: queue } : {}),
  });
  const worker = createAgentWorker({
    as: 'node-agent',
    config,
    store,
    trust,
    enrolled,
    queue,
    ranOn: node,
    registry,
    accepts: (job) => {
      const target = jobNode(job);
      return target === node ? undefined : `job for node ${target ?? '(none)'} reached the agent of ${node}`;
    },
    seenFile: 'seen-work.json',
    controls: {
      ...(breakers ? { breakers } : {}),
      node,
      nodeModeLabel: async () => (nodeLabels ? (await nodeLabels.labelsOf(node))?.[NODE_MODE_LABEL] : config.nodeLabels?.[NODE_MODE_LABEL]),
    },
    events,
    kubeRead,
    log,
  });
  return Object.assign(worker, { trust });
}
