import { ConfigError } from '../../src/core/config/load.ts';
import { KubeLookups } from '../../src/adapters/kube/api/kube-lookups.ts';
import { JobEventRecorder } from '../../src/adapters/kube/job-events.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { runMain } from '../../src/adapters/process/run-main.ts';
import { Dispatcher } from '../../src/adapters/jobstore/dispatcher.ts';
import { createRealHost } from '../host/index.ts';
import { createNodeAgent } from './agent.ts';
import { agentKubeApis } from './kube-apis.ts';
import { KubeAttachedVolumes } from './kube-attached-volumes.ts';
import { KubeNodeLabels } from './kube-node-labels.ts';
import { KubeNodePods } from './kube-node-pods.ts';
import { lazyRegistry } from '../engine/lazy-registry.ts';
import { NODE_RUNBOOKS } from './node-runbooks.ts';
import { startSelfChecks } from './self-checks.ts';
import { enrolUntilDone } from '../engine/enrolled-keys.ts';
import { startProbeServer } from '../../src/adapters/observability/probe-server.ts';

// `npm run node-agent`: the node agent, configured from the environment. Refuses to start
// without NODE_NAME (in a DaemonSet it comes from spec.nodeName). On SIGTERM it finishes the
// current step, then stops; an unfinished job is taken again and resumes from its journal.
// In a pod (or with KUBECONFIG) it asks the API server for its node's labels and
// VolumeAttachments and pods; elsewhere labels come from NODE_LABELS, attachments are unknown and
// the RBD node half refuses (it cannot tell stale mounts from live ones).

const log = createLogger('node-agent');
await runMain('node-agent', log, async (given) => {
  if (!given.nodeName) throw new ConfigError('NODE_NAME is required: the node agent serves exactly one node (set it from spec.nodeName)');
  const node = given.nodeName;
  // ENROL_URL: this node's work keys and Redis user come from the receiver, for this node only.
  const enrolled = given.enrolUrl
    ? await enrolUntilDone({
        target: { url: given.enrolUrl, tokenFile: given.enrolTokenFile, ...(given.enrolCaFile ? { caFile: given.enrolCaFile } : {}) },
        request: { as: 'node-agent', node },
        log: log.child({ node, component: 'enrolment' }),
        // A new Redis password needs new connections: stop as on SIGTERM, and the DaemonSet starts this again.
        onRedisChanged: () => {
          log.warn({ node }, 'enrolment handed out another Redis password; restarting to use it');
          process.kill(process.pid, 'SIGTERM');
        },
      })
    : undefined;
  const redisUser = enrolled?.redis();
  const config = redisUser ? { ...given, redisUsername: redisUser.username, redisPassword: redisUser.password } : given;
  const clients = await agentKubeApis();
  const inCluster = clients !== undefined;
  // Typed as the node agent's list in src/adapters/kube/rbac.ts: another lookup would need another grant.
  const lookups: LookupsOf<'node-agent'> | undefined = clients ? new KubeLookups(clients) : undefined;
  const events = clients ? new JobEventRecorder({ events: clients.events, instance: config.nodeName, log }) : undefined;
  const nodeLabels = lookups ? new KubeNodeLabels(lookups) : undefined;
  const deps = lookups && nodeLabels ? { nodeLabels, attachedVolumes: new KubeAttachedVolumes(lookups), nodePods: new KubeNodePods(lookups) } : {};
  const agent = createNodeAgent({
    config,
    registry: lazyRegistry(NODE_RUNBOOKS, async () => (await import('./registry.ts')).defaultNodeRegistry(config, log, deps)),
    log: log.child({ node }),
    ...(nodeLabels ? { nodeLabels } : {}),
    ...(events ? { events } : {}),
    ...(enrolled ? { enrolled } : {}),
  });
  // What the agent notices by itself (a placeholder's disk back, an interrupted cleanup) goes on
  // its own queue through the worker's command connection: no third connection per node.
  const dispatcher = new Dispatcher(agent.connection, {
    prefix: config.queuePrefix,
    timeoutMs: config.enqueueTimeoutMs,
    sealer: agent.trust.sealer,
    sealTtlMs: agent.trust.ttlMs,
    // Enrolled, the receiver recorded this node's queue; the node's own Redis user may not.
    recordsQueues: !enrolled,
    dedupWindowMs: config.dedupWindowMs,
  });
  const checks = startSelfChecks({
    node,
    host: createRealHost({ root: config.hostRoot, nsenter: config.hostNsenter }),
    stateDir: config.stateDir,
    enqueue: (jobs) => dispatcher.enqueue(jobs),
    intervalMs: config.placeholderCheckSeconds * 1000,
    log: log.child({ node, component: 'self-checks' }),
  });
  // Liveness, readiness and /metrics for the kubelet and Prometheus (PROBE_PORT).
  const probes = await startProbeServer({
    port: config.probePort,
    host: config.probeListenAddress,
    log,
    connections: () => agent.connections.states(),
    running: () => agent.running(),
    expositions: [agent.metrics.exposition],
  });
  log.info(
    {
      node: config.nodeName,
      defaultMode: config.defaultMode,
      modes: config.runbookModes,
      labels: inCluster ? 'api-server' : 'NODE_LABELS',
    },
    'node agent started',
  );
  return {
    close: async () => {
      await probes.close();
      await checks.stop();
      await dispatcher.close();
      await agent.close();
      enrolled?.close();
    },
  };
});
