import { once } from 'node:events';
import { breakerCapsFromConfig } from '../adapters/controls/breakers.ts';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import { readTls, watchTls } from './http/tls-files.ts';
import type { AddressInfo } from 'node:net';
import type { Config } from '../core/config/schema.ts';
import { InMemoryLookups, type ClusterLookups } from '../adapters/kube/lookups.ts';
import { KubeLookups } from '../adapters/kube/api/kube-lookups.ts';
import { kubeClients, loadKubeConfig } from '../adapters/kube/client.ts';
import { createKubeMetrics } from '../adapters/kube/kube-metrics.ts';
import { startKubeWatches, type KubeWatches } from './watches/kube-watches.ts';
import { createApp } from './http/app.ts';
import { IncidentIndex } from '../adapters/jobstore/incident-index.ts';
import { likelyQueues } from './console/incident-detail.ts';
import { BullJobStore } from '../adapters/jobstore/bull-job-store.ts';
import { createQueueBoard } from '../adapters/jobstore/queue-board.ts';
import { knownQueuesKey } from '../adapters/redis/known-queues.ts';
import type { EventTrust } from './sources/event-trust.ts';
import { createLogger, type Logger } from '../adapters/observability/logger.ts';
import { createReceiverMetrics } from '../adapters/observability/metrics.ts';
import { Dispatcher } from '../adapters/jobstore/dispatcher.ts';
import { trustFromConfig } from '../core/trust/from-config.ts';
import { JobReader } from './http/job-reader.ts';
import { whenReady } from '../adapters/redis/redis.ts';
import { RedisConnections } from '../adapters/redis/redis-connections.ts';
import { ackReplicas, describeTarget, redisTarget } from '../adapters/redis/redis-target.ts';
import { ReplicaAck, replicaAckKey } from '../adapters/redis/replica-ack.ts';
import type { Redis } from 'ioredis';
import { OperatorActions } from './actions/operator-actions.ts';
import { CONTROL_RESEAL_MS } from '../core/controls/sealed-records.ts';
import { JobRetry } from './actions/job-retry.ts';
import { JobEventReader } from '../adapters/kube/job-event-reader.ts';
import type { RepeatAnswers } from './ingest/repeat-answers.ts';
import { EventsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { cachedReviews } from './auth/cached-reviews.ts';
import { kubeAccessReviews, type AccessReviews } from './auth/access-reviews.ts';
import { FailedAuthLimiter } from './auth/failed-auth-limiter.ts';
import { OperatorAuth } from './auth/operator-auth.ts';
import { KubeConfigError } from '../adapters/kube/config-error.ts';
import { ConfigError } from '../core/config/load.ts';
import { startFleetExporter } from './fleet/fleet-exporter.ts';
import { enrolmentFromConfig } from './enrolment/from-config.ts';
import { NodeRedisUsers, nodeUserName } from '../adapters/redis/node-redis-users.ts';

// Composition root of the receiver: wires configuration, Redis, queues, lookups and the HTTP app,
// and owns their shutdown order (stop taking requests, then close queues, then Redis).

export interface Receiver {
  url: string;
  server: Server;
  /** Its Redis connections (fault tests kill them by name: `producer`, `replica-ack`). */
  connections: RedisConnections;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  lookups?: ClusterLookups;
  log?: Logger;
  /** Answers for repeated Alertmanager alerts (default: a private one of the default size). */
  repeats?: RepeatAnswers;
  /**
   * OPERATOR_AUTH=kubernetes: the API server that reviews operator tokens (tests: the fake's).
   * Default: the KUBE_WATCH access when loaded, else the pod's service account or kubeconfig.
   */
  operatorKubeConfig?: KubeConfig;
  /**
   * Kubernetes access for the fleet-metrics Lease (tests: the fake's) and its namespace. Default:
   * the KUBE_WATCH access when loaded, else the pod's service account when in a pod, else none
   * (this receiver exports the fleet-wide series by itself).
   */
  lease?: { kubeConfig: KubeConfig; namespace?: string };
}

/** How often an idle receiver asks for a replica acknowledgement (REDIS_ACK_REPLICAS > 0). */
const REPLICA_ACK_WATCH_MS = 10_000;

/** Kubernetes access for the Lease: in a pod there is always some, even with KUBE_WATCH off. */
function leaseAccess(kubeConfig: KubeConfig | undefined): KubeConfig | undefined {
  if (kubeConfig || !process.env['KUBERNETES_SERVICE_HOST']) return kubeConfig;
  return loadKubeConfig();
}

/** TokenReview/SubjectAccessReview access for OPERATOR_AUTH=kubernetes, or why there is none. */
function operatorReviews(config: Config, kc: KubeConfig | undefined): { reviews?: AccessReviews; unavailableReason?: string; access?: KubeConfig } {
  if (config.operatorAuth !== 'kubernetes') return {};
  let access = kc;
  if (!access) {
    try {
      access = loadKubeConfig();
    } catch (err) {
      if (!(err instanceof KubeConfigError)) throw err;
      return { unavailableReason: err.message };
    }
  }
  return {
    access,
    reviews: cachedReviews(kubeAccessReviews(access, config.operatorTokenAudiences), {
      tokenTtlMs: config.operatorTokenCacheSeconds * 1000,
      accessTtlMs: config.operatorAccessCacheSeconds * 1000,
    }),
  };
}

export async function startReceiver(config: Config, opts: ReceiverOptions = {}): Promise<Receiver> {
  const log = opts.log ?? createLogger('receiver', config.logLevel, { buffered: true });
  // Everything the receiver stores for an agent is sealed with its key (fails closed without one).
  const trust = trustFromConfig(config, 'receiver');
  if (trust.allowUnsigned) log.warn('ALLOW_UNSIGNED_WORK=true: agents accept work without a seal; anyone who can write to Redis can make them act');
  const target = redisTarget(config);
  // Every connection of this process is opened, brought back and closed by one owner.
  const connections = new RedisConnections({ target, process: 'receiver', log: log.child({ component: 'redis' }) });
  const redis = connections.open('producer', 'producer');
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  // REDIS_ACK_REPLICAS: 202 only once a replica has the job, asked on a connection of its own
  // (config refuses it on a Cluster, so this is a single server or a Sentinel primary).
  const replicas = ackReplicas(config);
  const replicaAck =
    replicas > 0 && target.kind !== 'cluster'
      ? (() => {
          const ackConnection = connections.open('replica-ack', 'producer') as Redis;
          ackConnection.on('error', (err) => log.debug({ err: err.message }, 'redis connection error (replica acknowledgement)'));
          const ack = new ReplicaAck(ackConnection, {
            replicas,
            timeoutMs: config.redisAckTimeoutMs,
            markerKey: replicaAckKey(config.queuePrefix),
          });
          // An idle receiver still says within this long whether a replica would acknowledge.
          ack.watch(REPLICA_ACK_WATCH_MS);
          return ack;
        })()
      : undefined;
  log.info({ redis: describeTarget(target), ackReplicas: replicaAck ? replicas : 0 }, 'redis');
  try {
    await whenReady(redis, 5_000);
  } catch (err) {
    // Serve anyway: /readyz says not ready and webhooks get 503 until Redis answers.
    log.warn({ err: (err as Error).message }, 'Redis is not reachable yet; webhooks will get 503 until it is');
  }
  const incidents = new IncidentIndex(redis, config.queuePrefix);
  const dispatcher = new Dispatcher(redis, {
    prefix: config.queuePrefix,
    timeoutMs: config.enqueueTimeoutMs,
    sealer: trust.sealer,
    sealTtlMs: trust.ttlMs,
    ...(replicaAck ? { replicaAck } : {}),
    ...(config.dedupWindowSeconds !== undefined ? { dedupWindowSeconds: config.dedupWindowSeconds } : {}),
    // Every new job once, whichever way it came (webhook or watch), one line per Redis call.
    onStored: (jobs) => log.info({ stored: jobs.map((j) => ({ id: j.id, queue: j.queue, runbook: j.runbook })) }, 'jobs stored'),
    // and into the console's index of incidents (src/adapters/jobstore/incident-index.ts), in the batch's own script call.
    index: incidents,
    onIndexError: (err) => log.warn({ err: err.message }, "the console's incident index missed a batch"),
  });
  // The job store over the dispatcher's queues: the API's, the console's and the actions' reads.
  const jobs = new BullJobStore({ redis, prefix: config.queuePrefix, queue: (name) => dispatcher.queue(name) });
  const likely = likelyQueues({ redis, prefix: config.queuePrefix, incidents });
  const operatorActions = new OperatorActions({
    redis,
    prefix: config.queuePrefix,
    jobs,
    caps: breakerCapsFromConfig(config),
    approvalTtlMs: config.approvalTtlSeconds * 1000,
    configuredModes: { default: config.defaultMode, runbooks: config.runbookModes },
    // Where a job's approval record lives (its queue's keys), for a job no parked record names.
    locate: async (id) => (await jobs.find(id, likely))?.queue,
    // Controls are signed with the control key when one is configured (src/core/trust/control-keys.ts).
    trust: {
      ...(trust.controls.sealer ? { sealer: trust.controls.sealer } : {}),
      ring: trust.controls.ring,
      allowUnsigned: trust.allowUnsigned,
      // The fleet audit list's entries sealed with its work key; every list checked with the roots.
      audit: { ...(trust.sealer ? { sealer: trust.sealer } : {}), roots: trust.ring },
      onUntrusted: (u) =>
        log.warn(
          { kind: u.kind, field: u.field.slice(0, 200), reason: u.reason, detail: u.detail },
          'untrusted control record ignored (not written through the API)',
        ),
    },
  });
  // Standing modes and pauses are sealed again long before their short seals lapse, by every
  // replica (a compare-and-set: the first wins, a newer decision is never undone).
  const reseal = (): void => {
    operatorActions.store
      .resealStanding()
      .catch((err: Error) => log.warn({ err: err.message }, 'could not seal the standing controls again; they lapse if no replica does'));
  };
  reseal();
  const resealTimer = setInterval(reseal, CONTROL_RESEAL_MS);
  resealTimer.unref();
  // An operator's retry: a new job for the same work, sealed afresh (src/control/actions/job-retry.ts).
  const retries = new JobRetry({
    jobs,
    store: operatorActions.store,
    index: incidents,
    likely,
    trust: { ring: trust.ring, ...(trust.sealer ? { sealer: trust.sealer } : {}), ttlMs: trust.ttlMs, allowUnsigned: trust.allowUnsigned },
  });
  const metrics = createReceiverMetrics();
  // KUBE_WATCH: cluster access for triage's lookups and the watch sources (fails fast without a kubeconfig).
  const kubeConfig = config.kubeWatch ? loadKubeConfig() : undefined;
  const lookups = opts.lookups ?? (kubeConfig ? new KubeLookups(kubeClients(kubeConfig)) : new InMemoryLookups());
  // One replica exports the fleet-wide series (src/control/fleet/fleet-exporter.ts).
  const fleet = startFleetExporter({
    registry: metrics.registry,
    log: log.child({ component: 'fleet-metrics' }),
    leaseSeconds: config.fleetMetricsLeaseSeconds,
    kubeConfig: opts.lease?.kubeConfig ?? leaseAccess(kubeConfig),
    ...(opts.lease?.namespace ? { namespace: opts.lease.namespace } : {}),
  });
  let watches: KubeWatches | undefined;
  const eventTrust: EventTrust = { npdSources: new Set(config.npdEventSources), npdNamespace: config.npdEventNamespace };
  const authLimiter = new FailedAuthLimiter({ perMinute: config.authFailuresPerMinute });
  const { access: reviewAccess, ...reviews } = operatorReviews(config, opts.operatorKubeConfig ?? kubeConfig);
  // REDIS_NODE_USERS: one Redis user per enrolled node, on every server, kept there by a watch.
  if (config.redisNodeUsers && config.enrolNodeAgents.length === 0)
    throw new ConfigError('REDIS_NODE_USERS=true needs enrolment (ENROL_NODE_AGENTS): agents learn their Redis user when they enrol');
  const nodeUsers = config.redisNodeUsers
    ? new NodeRedisUsers({ target, prefix: config.queuePrefix, log: log.child({ component: 'node-redis-users' }) })
    : undefined;
  nodeUsers?.watch();
  // Node agents and the cluster worker trade their pod's token for their own queue's keys.
  const enrolment = enrolmentFromConfig(config, trust.ring, opts.operatorKubeConfig ?? kubeConfig ?? reviewAccess, {
    registry: {
      record: async (queue) => {
        await redis.sadd(knownQueuesKey(config.queuePrefix), queue);
      },
    },
    ...(nodeUsers
      ? {
          redisUsers: {
            userName: nodeUserName,
            // Answered once the primary has it; a server that missed it gets it from the watch.
            ensure: async (node, hash) => {
              const r = await nodeUsers.ensure(node, hash);
              if (r.applied.length === 0)
                throw new Error(
                  `no Redis server took the user of node ${node}: ${r.failed
                    .map((f) => `${f.server}: ${f.error}`)
                    .join('; ')
                    .slice(0, 300)}`,
                );
              if (r.failed.length > 0)
                log.warn({ node, failed: r.failed }, "a Redis server missed a node's user; the watch applies it when the server answers");
            },
          },
        }
      : {}),
  });
  // The console reads a job's Events back with the receiver's own access (KUBE_WATCH's, or the one operator identity uses).
  const eventAccess = kubeConfig ?? reviewAccess;
  const operatorAuth = new OperatorAuth({
    mode: config.operatorAuth,
    ...reviews,
    webhookTokens: config.tokens,
    proxy: { cidrs: config.authProxyCidrs, userHeader: config.authProxyUserHeader, groupsHeader: config.authProxyGroupsHeader },
    limiter: authLimiter,
  });
  if (operatorAuth.unavailable && config.operatorAuth === 'kubernetes')
    log.error(
      { why: operatorAuth.unavailable },
      'operator routes and the dashboard will answer 503 until this is fixed (OPERATOR_AUTH=off says that no operator access is wanted)',
    );
  const app = createApp({
    redis,
    prefix: config.queuePrefix,
    tokens: config.tokens,
    operatorAuth,
    authLimiter,
    trustedProxyCidrs: config.trustedProxyCidrs,
    bodyLimit: config.bodyLimit,
    reader: new JobReader(jobs, likely),
    dispatcher,
    lookups,
    // With the API server's answers, a posted node recovery must agree with the Node's status.
    corroborate: kubeConfig !== undefined,
    kubeState: () => watches?.state(),
    connections: () => connections.states(),
    ...(replicaAck ? { replicaAck: () => replicaAck.status() } : {}),
    nodeRecoveryAlerts: new Set(config.nodeRecoveryAlerts),
    ...(enrolment ? { enrolment } : {}),
    // Agents' breaker slots (those given ENROL_URL ask here): where this receiver holds the roots.
    ...(trust.ring.scope === undefined && trust.ring.verify.size > 0 ? { agentBreakers: { roots: trust.ring, caps: breakerCapsFromConfig(config) } } : {}),
    eventTrust,
    metrics,
    fleetMetrics: fleet.exports,
    log,
    ...(opts.repeats ? { repeats: opts.repeats } : {}),
    retryAfterSeconds: 5,
    controls: {
      actions: operatorActions,
      retries,
      ...(eventAccess ? { events: new JobEventReader(eventAccess.makeApiClient(EventsV1Api)) } : {}),
      jobs,
      board: createQueueBoard((name) => dispatcher.queue(name)),
      uiSessionTtlSeconds: config.uiSessionTtlSeconds,
      incidents,
    },
  });
  // Slow senders must not hold sockets for Node's default 300 s: headers and the whole request
  // have deadlines (408 and close), checked every second rather than Node's default 30.
  const timeouts = {
    headersTimeout: config.httpHeadersTimeoutMs,
    requestTimeout: config.httpRequestTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, config.httpHeadersTimeoutMs),
  };
  const tlsFiles = config.tlsCertFile && config.tlsKeyFile ? { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile } : undefined;
  const server: Server = tlsFiles ? createHttpsServer({ ...timeouts, ...readTls(tlsFiles) }, app) : createServer(timeouts, app);
  const stopTlsWatch =
    tlsFiles && server instanceof HttpsServer
      ? watchTls(
          tlsFiles,
          (opts) => {
            server.setSecureContext(opts);
            log.info({ cert: tlsFiles.certFile }, 'TLS certificate reloaded');
          },
          (err) =>
            log.error({ err: err.message, cert: tlsFiles.certFile }, 'the TLS certificate files changed but cannot be used; still serving the previous one'),
        )
      : undefined;
  server.listen(config.port, config.listenAddress);
  await once(server, 'listening');
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `${tlsFiles ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`;
  log.info(
    {
      url,
      tls: tlsFiles ? 'on' : 'off',
      auth: config.tokens.length > 0 ? 'bearer token required' : 'none',
      operators: config.operatorAuth,
    },
    'receiver listening',
  );
  if (kubeConfig) {
    watches = await startKubeWatches({
      kubeConfig,
      ingest: { lookups, dispatcher, corroborate: true },
      eventTrust,
      log: log.child({ component: 'kube' }),
      // A deleted Node's agent is gone: so is its Redis user (every replica does it; removing twice is harmless).
      ...(nodeUsers
        ? {
            onNodeDeleted: (node: string) =>
              void nodeUsers.remove(node).catch((err: Error) => log.warn({ node, err: err.message }, "could not remove a deleted node's Redis user")),
          }
        : {}),
      metrics: createKubeMetrics(metrics.registry),
      reconcileIntervalMs: config.kubeReconcileSeconds * 1000,
    });
  }

  let closing: Promise<void> | undefined;
  return {
    url,
    server,
    connections,
    close: () =>
      (closing ??= (async () => {
        clearInterval(resealTimer);
        stopTlsWatch?.();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        // Hand the Lease over now, not after it expires.
        await fleet.close();
        await watches?.close();
        await dispatcher.close();
        replicaAck?.close();
        await nodeUsers?.close();
        await connections.close();
      })()),
  };
}
