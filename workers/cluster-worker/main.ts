import { CLUSTER_QUEUE } from '../../src/core/catalogue/queues.ts';
import { keepFor } from '../../src/core/catalogue/policy.ts';
import { modeOf } from '../../src/core/config/load.ts';
import { kubeAccessConfigured } from '../../src/core/config/in-cluster.ts';
import { KubeLookups } from '../../src/adapters/kube/api/kube-lookups.ts';
import { kubeClients, loadKubeConfig } from '../../src/adapters/kube/kube-config.ts';
import { JobEventRecorder } from '../../src/adapters/kube/job-events.ts';
import { InMemoryLookups } from '../../src/adapters/kube/lookups.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { runMain } from '../../src/adapters/process/run-main.ts';
import { Dispatcher } from '../../src/adapters/jobstore/dispatcher.ts';
import { IncidentIndex } from '../../src/adapters/jobstore/incident-index.ts';
import { RedisConnections } from '../../src/adapters/redis/redis-connections.ts';
import { NO_AGENT_CHECK_MS, NoAgentWatch, noAgentGraceMs } from './no-agent-watch.ts';
import { redisTarget } from '../../src/adapters/redis/redis-target.ts';
import { createRunbookWorker } from '../engine/runbook-worker.ts';
import { controlsFromConfig } from '../engine/job-controls.ts';
import { seenWork } from '../engine/seen-work.ts';
import { controlMemory, controlMemoryFile } from '../engine/control-memory.ts';
import { trustFromConfig } from '../../src/core/trust/from-config.ts';
import { GenerationTable } from '../../src/core/trust/key-generations.ts';
import { followGenerations, NodeGenerations } from '../../src/adapters/redis/node-generations.ts';
import { join } from 'node:path';
import { defaultClusterRegistry } from './registry.ts';
import { enrolUntilDone } from '../engine/enrolled-keys.ts';
import { startProbeServer } from '../../src/adapters/observability/probe-server.ts';

// `npm run cluster-worker`: runs cluster-side runbooks (where Ceph credentials are). In a pod (or
// with KUBECONFIG) it asks the API server which node holds an image; without cluster access no
// watcher maps to a node, so a gone node's watcher is only ever fenced by policy.

const log = createLogger('cluster-worker');
// long because: the cluster worker's composition root: config, trust, Kubernetes access, the worker, the no-agent check, probes
await runMain('cluster-worker', log, async (config) => {
  const kube = kubeAccessConfigured();
  const clients = kube ? kubeClients(loadKubeConfig()) : undefined;
  const lookups: LookupsOf<'cluster-worker'> = clients ? new KubeLookups(clients) : new InMemoryLookups();
  // Node-side halves go onto the node's own queue, like any job the receiver stores.
  const connections = new RedisConnections({
    target: redisTarget(config),
    process: 'cluster-worker',
    log: log.child({ component: 'redis' }),
  });
  const redis = connections.open('producer', 'producer');
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  // It verifies the receiver's seal on what it runs (ENROL_URL: with its own queue's keys from
  // enrolment, not the receiver's root), and seals the node halves it hands out with its own root.
  const enrolled = config.enrolUrl
    ? await enrolUntilDone({
        target: { url: config.enrolUrl, tokenFile: config.enrolTokenFile, ...(config.enrolCaFile ? { caFile: config.enrolCaFile } : {}) },
        request: { as: 'cluster-worker' },
        log: log.child({ component: 'enrolment' }),
      })
    : undefined;
  // The node halves it seals carry each node's credential generation, as the receiver's do (a
  // revoked node's agent holds the later one's keys): the table follows Redis.
  const generations = new GenerationTable();
  const followed = followGenerations({ store: new NodeGenerations(redis, config.queuePrefix), table: generations, log });
  const trust = trustFromConfig(config, 'cluster-worker', enrolled, generations);
  if (trust.allowUnsigned) log.warn('ALLOW_UNSIGNED_WORK=true: the cluster worker runs work without a seal');
  const events = clients ? new JobEventRecorder({ events: clients.events, log }) : undefined;
  // The node halves appear in the console's index of incidents as the receiver's jobs do.
  const dispatcher = new Dispatcher(redis, {
    prefix: config.queuePrefix,
    timeoutMs: config.enqueueTimeoutMs,
    sealer: trust.sealer,
    sealTtlMs: trust.ttlMs,
    dedupWindowMs: config.dedupWindowMs,
    index: new IncidentIndex(redis, config.queuePrefix),
    onIndexError: (err) => log.warn({ err: err.message }, "the console's incident index missed a batch"),
  });
  const worker = createRunbookWorker({
    queue: CLUSTER_QUEUE,
    redis: redisTarget(config),
    prefix: config.queuePrefix,
    ranOn: 'cluster-worker',
    process: 'cluster-worker',
    registry: defaultClusterRegistry(config, { lookups, dispatcher }),
    modeOf: (runbook) => modeOf(config, runbook),
    accepts: () => undefined,
    lockDurationMs: config.lockDurationMs,
    keepFinished: keepFor(config.dedupWindowMs.cluster),
    log,
    controls: controlsFromConfig(config),
    trust: {
      ring: trust.ring,
      controlRing: trust.controls.ring,
      allowUnsigned: trust.allowUnsigned,
      seen: seenWork(join(config.stateDir, 'seen-work-cluster.json'), log),
      controls: controlMemory(join(config.stateDir, controlMemoryFile(config.queuePrefix, 'cluster-worker')), log),
      ...(enrolled ? { onUnknownKey: () => enrolled.renewSoon() } : {}),
      ...(trust.sealer ? { auditSealer: trust.sealer } : {}),
    },
    ...(events ? { events } : {}),
  });
  // Jobs on node queues that no agent serves (workers/cluster-worker/no-agent-watch.ts): here because this
  // process is a singleton (one Event and one failure per job); the receiver runs replicas.
  const noAgent = new NoAgentWatch({
    redis,
    prefix: config.queuePrefix,
    graceMs: noAgentGraceMs(config.lockDurationMs),
    deadlineMs: config.noAgentDeadlineSeconds * 1000,
    intervalMs: NO_AGENT_CHECK_MS,
    log: log.child({ component: 'no-agent' }),
    ...(events ? { events } : {}),
    workerConnection: () => connections.open('no-agent', 'worker'),
    closeWorkerConnection: false,
    keepFailed: keepFor(config.dedupWindowMs.node),
  });
  noAgent.start();
  // Liveness, readiness and /metrics for the kubelet and Prometheus (PROBE_PORT).
  const probes = await startProbeServer({
    port: config.probePort,
    host: config.probeListenAddress,
    log,
    connections: () => [...connections.states(), ...worker.connections.states()],
    running: () => worker.running(),
    expositions: [worker.metrics.exposition],
  });
  log.info({ kube: kube ? 'api-server' : 'none' }, 'cluster worker started');
  return {
    close: async () => {
      await probes.close();
      await noAgent.close();
      await worker.close();
      await dispatcher.close();
      followed.close();
      await connections.close();
      enrolled?.close();
    },
  };
});
