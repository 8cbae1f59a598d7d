import { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import { IncidentIndex } from '../../src/adapters/jobstore/incident-index.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { followGenerations, NodeGenerations } from '../../src/adapters/redis/node-generations.ts';
import { redisTarget } from '../../src/adapters/redis/redis-target.ts';
import { CLUSTER_QUEUE } from '../../src/core/catalogue/queues.ts';
import type { ClusterWorkerConfig } from '../../src/core/config/schema.ts';
import { trustFromConfig } from '../../src/core/trust/from-config.ts';
import { GenerationTable } from '../../src/core/trust/key-generations.ts';
import { agentEnqueuer } from '../agent-bootstrap/enqueuer.ts';
import type { EnrolledKeys } from '../engine/enrolled-keys.ts';
import { createAgentWorker, type RunbookWorker } from '../engine/runbook-worker.ts';
import type { ClusterKube } from './cluster-kube.ts';
import { defaultClusterRegistry } from './registry.ts';
import { BullJobStore } from '../../src/adapters/jobstore/bull-job-store.ts';
import { redisBlocklistUndo } from '../runbooks/rbd-stale-mapping/blocklist-undo.ts';
import { cleanupJobsOf } from '../runbooks/out-of-service-taint-release/cleanup-jobs.ts';

// The cluster worker's worker: the cluster queue's runbooks. It verifies the receiver's seal on
// what it runs (enrolled: with its own queue's keys, not the receiver's root), and hands the node
// halves to the nodes' queues sealed with its own root, each with its node's credential
// generation as the receiver's are (a revoked node's agent holds the later one's keys).

export interface ClusterWorkerOptions {
  config: ClusterWorkerConfig;
  kube: ClusterKube;
  enrolled?: EnrolledKeys | undefined;
  log: Logger;
}

export function createClusterWorker({ config, kube, enrolled, log }: ClusterWorkerOptions): RunbookWorker {
  const store = new AgentStore({ redis: redisTarget(config), process: 'cluster-worker', prefix: config.queuePrefix, log });
  // Its own reads (key generations, the incident index, the no-agent check) and the node halves
  // go on a producer connection beside the worker's.
  const redis = store.held('producer', 'producer');
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  const generations = new GenerationTable();
  const followed = followGenerations({ store: new NodeGenerations(redis, config.queuePrefix), table: generations, log });
  const trust = trustFromConfig(config, 'cluster-worker', enrolled, generations);
  // The node halves appear in the console's index of incidents as the receiver's jobs do.
  const dispatcher = agentEnqueuer(
    store,
    config,
    trust,
    {
      index: new IncidentIndex(redis, config.queuePrefix),
      onIndexError: (err) => log.warn({ err: err.message }, "the console's incident index missed a batch"),
    },
    'producer',
  );
  const worker = createAgentWorker({
    as: 'cluster-worker',
    config,
    store,
    trust,
    enrolled,
    queue: CLUSTER_QUEUE,
    ranOn: 'cluster-worker',
    registry: defaultClusterRegistry(config, {
      lookups: kube.lookups,
      dispatcher,
      kubeGet: kube.get,
      kube: kube.kube,
      blocklistUndo: redisBlocklistUndo(redis, config.queuePrefix),
      // The node half's results: its jobs found by node in the incident index, read from their queues.
      cleanupJobs: cleanupJobsOf(
        new IncidentIndex(redis, config.queuePrefix),
        new BullJobStore({ redis, prefix: config.queuePrefix, queue: (name) => dispatcher.queue(name) }),
      ),
    }),
    accepts: () => undefined,
    seenFile: 'seen-work-cluster.json',
    events: kube.events,
    ...(kube.inCluster ? { kubeRead: kube.get } : {}),
    log,
  });
  const close = worker.close;
  return Object.assign(worker, {
    close: async () => {
      followed.close();
      await close();
    },
  });
}
