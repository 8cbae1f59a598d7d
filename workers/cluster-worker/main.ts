import { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import { IncidentIndex } from '../../src/adapters/jobstore/incident-index.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { followGenerations, NodeGenerations } from '../../src/adapters/redis/node-generations.ts';
import { redisTarget } from '../../src/adapters/redis/redis-target.ts';
import { CLUSTER_QUEUE } from '../../src/core/catalogue/queues.ts';
import { keepFinished } from '../../src/core/catalogue/policy.ts';
import { trustFromConfig } from '../../src/core/trust/from-config.ts';
import { GenerationTable } from '../../src/core/trust/key-generations.ts';
import { createAgentWorker } from '../agent-bootstrap/agent-worker.ts';
import { agentEnqueuer } from '../agent-bootstrap/enqueuer.ts';
import { runAgent } from '../agent-bootstrap/run-agent.ts';
import { clusterKube } from './cluster-kube.ts';
import { NO_AGENT_CHECK_MS, NoAgentWatch, noAgentGraceMs } from './no-agent-watch.ts';
import { defaultClusterRegistry } from './registry.ts';

// `npm run cluster-worker`: the cluster queue's runbooks (where Ceph credentials are), a singleton
// (agent-bootstrap/ does what both agents do: enrolment, probes, shutdown). It hands node halves
// to the nodes' queues, sealed with its own root, and watches for jobs no node agent takes.

const log = createLogger('cluster-worker');
await runAgent(
  log,
  () => ({ as: 'cluster-worker' }),
  async ({ config, enrolled }) => {
    const kube = clusterKube(log);
    const store = new AgentStore({ redis: redisTarget(config), process: 'cluster-worker', prefix: config.queuePrefix, log });
    // Its own reads and the node halves' stores go on a producer connection beside the worker's.
    const redis = store.held('producer', 'producer');
    redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
    // The node halves it seals carry each node's credential generation, as the receiver's do (a
    // revoked node's agent holds the later one's keys): the table follows Redis.
    const generations = new GenerationTable();
    const followed = followGenerations({ store: new NodeGenerations(redis, config.queuePrefix), table: generations, log });
    // It verifies the receiver's seal on what it runs (enrolled: with its own queue's keys).
    const trust = trustFromConfig(config, 'cluster-worker', enrolled, generations);
    // The node halves appear in the console's index of incidents as the receiver's jobs do.
    const index = new IncidentIndex(redis, config.queuePrefix);
    const onIndexError = (err: Error): void => log.warn({ err: err.message }, "the console's incident index missed a batch");
    const dispatcher = agentEnqueuer(store, config, trust, { index, onIndexError }, 'producer');
    const registry = defaultClusterRegistry(config, { lookups: kube.lookups, dispatcher });
    const queue = CLUSTER_QUEUE;
    const worker = createAgentWorker({
      as: 'cluster-worker',
      config,
      store,
      trust,
      enrolled,
      queue,
      ranOn: 'cluster-worker',
      registry,
      accepts: () => undefined,
      seenFile: 'seen-work-cluster.json',
      events: kube.events,
      log,
    });
    // Jobs on node queues no agent serves: here because this process is a singleton (one Event
    // and one failure per job); the receiver runs replicas.
    const noAgent = new NoAgentWatch({
      redis,
      prefix: config.queuePrefix,
      graceMs: noAgentGraceMs(config.lockDurationMs),
      deadlineMs: config.noAgentDeadlineSeconds * 1000,
      intervalMs: NO_AGENT_CHECK_MS,
      log: log.child({ component: 'no-agent' }),
      ...(kube.events ? { events: kube.events } : {}),
      workerConnection: () => store.held('no-agent', 'worker'),
      closeWorkerConnection: false,
      keepFailed: keepFinished('node', config.dedupWindowSeconds),
    });
    noAgent.start();
    return { worker, alongside: [noAgent, followed], started: { msg: 'cluster worker started', fields: { kube: kube.inCluster ? 'api-server' : 'none' } } };
  },
);
