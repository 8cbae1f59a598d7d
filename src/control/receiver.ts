import { EventsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Server } from 'node:http';
import { breakerCapsFromConfig } from '../adapters/controls/breakers.ts';
import { KubeLookups } from '../adapters/kube/api/kube-lookups.ts';
import { kubeClients, loadKubeConfig } from '../adapters/kube/kube-config.ts';
import { JobEventReader } from '../adapters/kube/job-event-reader.ts';
import { createKubeMetrics } from '../adapters/kube/kube-metrics.ts';
import { type ClusterLookups, InMemoryLookups } from '../adapters/kube/lookups.ts';
import { createLogger, type Logger } from '../adapters/observability/logger.ts';
import { createReceiverMetrics, type ReceiverMetrics } from '../adapters/observability/metrics.ts';
import type { NodeRedisUsers } from '../adapters/redis/node-redis-users.ts';
import type { RedisConnections } from '../adapters/redis/redis-connections.ts';
import type { RedisConnection } from '../adapters/redis/redis.ts';
import { inCluster } from '../core/config/in-cluster.ts';
import type { ReceiverConfig } from '../core/config/schema.ts';
import { trustFromConfig } from '../core/trust/from-config.ts';
import { GenerationTable } from '../core/trust/key-generations.ts';
import { type FleetExporter, startFleetExporter } from './fleet/fleet-exporter.ts';
import { startNodeRedisBudget } from './fleet/start-node-redis-budget.ts';
import { createApp } from './http/app.ts';
import { JobReader } from './http/job-reader.ts';
import type { IngestDeps } from './ingest/ingest.ts';
import type { RepeatAnswers } from './ingest/repeat-answers.ts';
import { startControls } from './receiver/controls-module.ts';
import { startEnrolment } from './receiver/enrolment-module.ts';
import { type JobsModule, startJobs } from './receiver/jobs-module.ts';
import { type RecordsModule, startRecords } from './receiver/records-module.ts';
import { startRevocation } from './receiver/revocation-module.ts';
import { listen } from './receiver/listen.ts';
import { operators } from './receiver/operators-module.ts';
import { openRedis } from './receiver/redis-module.ts';
import { startScriptPreload } from './receiver/script-preload-module.ts';
import type { NodeRevocation } from './enrolment/node-revocation.ts';
import type { EventTrust } from './sources/event-trust.ts';
import { type KubeWatches, startKubeWatches } from './watches/kube-watches.ts';
import { TaintSightings } from '../adapters/controls/taint-sightings.ts';
import { BullJobWithdrawal } from '../adapters/jobstore/job-withdrawal.ts';
import type { ControlsStore } from '../adapters/controls/controls-store.ts';
import { remediationsApi } from '../adapters/kube/volume-medic-remediations.ts';
import type { RemediationWatchOptions } from './watches/node-healthcheck.ts';

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

/** Kubernetes access for the Lease: in a pod there is always some, even with KUBE_WATCH off. */
function leaseAccess(kubeConfig: KubeConfig | undefined): KubeConfig | undefined {
  if (kubeConfig || !inCluster()) return kubeConfig;
  return loadKubeConfig();
}

/**
 * KUBE_WATCH: the Node and Event watches and the reconcile, into the ingest the webhooks use. A
 * deleted Node's agent is gone: so are its credentials and its Redis user (every replica does it;
 * the generation rises once, removing twice is harmless).
 */
function startReceiverWatches(o: {
  kubeConfig: KubeConfig;
  ingest: IngestDeps;
  eventTrust: EventTrust;
  log: Logger;
  metrics: ReceiverMetrics;
  reconcileSeconds: number;
  revocation: Pick<NodeRevocation, 'nodeDeleted'> | undefined;
  nodeUsers: Pick<NodeRedisUsers, 'remove'> | undefined;
  taintSightings: TaintSightings;
  remediations?: RemediationWatchOptions | undefined;
}): Promise<KubeWatches> {
  const { log, metrics, revocation, nodeUsers } = o;
  return startKubeWatches({
    kubeConfig: o.kubeConfig,
    ingest: o.ingest,
    eventTrust: o.eventTrust,
    log: log.child({ component: 'kube' }),
    ...(revocation
      ? {
          onNodeDeleted: (node: string, uid?: string) =>
            void revocation.nodeDeleted(node, uid).catch((err: Error) => log.warn({ node, err: err.message }, "could not revoke a deleted node's credentials")),
        }
      : nodeUsers
        ? {
            onNodeDeleted: (node: string) =>
              void nodeUsers.remove(node).catch((err: Error) => log.warn({ node, err: err.message }, "could not remove a deleted node's Redis user")),
          }
        : {}),
    metrics: createKubeMetrics(metrics.registry),
    // What the watch did not believe counts where the webhooks' does.
    onIgnored: (ignored) => {
      for (const i of ignored) metrics.ignored.inc({ source: i.source, reason: i.reason });
    },
    reconcileIntervalMs: o.reconcileSeconds * 1000,
    taintSightings: o.taintSightings,
    ...(o.remediations ? { remediations: o.remediations } : {}),
  });
}

/**
 * NODE_HEALTHCHECK: VolumeMedicRemediation objects become jobs, their status the job's
 * (docs/node-healthcheck.md); a job withdrawn for a deleted object takes its parked record along.
 */
function remediationWatchOptions(kubeConfig: KubeConfig, j: JobsModule, store: Pick<ControlsStore, 'unpark'>): RemediationWatchOptions {
  return {
    api: remediationsApi(kubeConfig),
    jobs: j.jobs,
    withdrawal: new BullJobWithdrawal(
      (name) => j.dispatcher.queue(name),
      (queue, id) => store.unpark(queue, id),
    ),
  };
}

/** What one replica does for all, the Lease's leader: the fleet-wide series and the jobs' records. */
function startLeaderWork(
  config: ReceiverConfig,
  log: Logger,
  metrics: ReceiverMetrics,
  lease: { kubeConfig: KubeConfig | undefined; namespace?: string },
  redis: RedisConnection,
  jobs: Pick<JobsModule, 'jobs' | 'incidents'>,
): { fleet: FleetExporter; records: RecordsModule | undefined } {
  // One replica exports the fleet-wide series (src/control/fleet/fleet-exporter.ts).
  const fleet = startFleetExporter({
    registry: metrics.registry,
    log: log.child({ component: 'fleet-metrics' }),
    leaseSeconds: config.fleetMetricsLeaseSeconds,
    kubeConfig: lease.kubeConfig,
    ...(lease.namespace ? { namespace: lease.namespace } : {}),
  });
  // The same replica keeps the jobs' VolumeRemediation records (src/control/records/).
  const records = startRecords(config, log.child({ component: 'records' }), { ...lease, leading: fleet.exports, redis, jobs, registry: metrics.registry });
  return { fleet, records };
}

// long because: the receiver's composition root: one line or block per module it wires, and their shutdown order
export async function startReceiver(config: ReceiverConfig, opts: ReceiverOptions = {}): Promise<Receiver> {
  const log = opts.log ?? createLogger('receiver', config.logLevel, { buffered: true });
  // Everything the receiver stores for an agent is sealed with its key (fails closed without one),
  // for an enrolled node at that node's credential generation (revocation-module.ts).
  const generations = config.enrolNodeAgents.length > 0 ? new GenerationTable() : undefined;
  const trust = trustFromConfig(config, 'receiver', undefined, generations);
  if (trust.allowUnsigned) log.warn('ALLOW_UNSIGNED_WORK=true: agents accept work without a seal; anyone who can write to Redis can make them act');
  const r = await openRedis(config, log);
  const scripts = await startScriptPreload(log, r);
  const j = startJobs(config, log, r, trust);
  const controls = startControls(config, log, r, j, trust);
  const metrics = createReceiverMetrics();
  // KUBE_WATCH: cluster access for triage's lookups and the watch sources (fails fast without a kubeconfig).
  const kubeConfig = config.kubeWatch ? loadKubeConfig() : undefined;
  const lookups = opts.lookups ?? (kubeConfig ? new KubeLookups(kubeClients(kubeConfig)) : new InMemoryLookups());
  const { fleet, records } = startLeaderWork(config, log, metrics, opts.lease ?? { kubeConfig: leaseAccess(kubeConfig) }, r.redis, j);
  const eventTrust: EventTrust = { npdSources: new Set(config.npdEventSources), npdNamespace: config.npdEventNamespace };
  const ops = operators(config, log, opts.operatorKubeConfig ?? kubeConfig);
  const enrol = startEnrolment(config, log, r, trust, opts.operatorKubeConfig ?? kubeConfig ?? ops.access, scripts, generations);
  const revoke = startRevocation(log, enrol, generations, (action, target, asked) => controls.actions.store.audit(action, target, asked));
  await revoke?.ready;
  // A node filling the shared Redis loses its writes, not the fleet (src/control/fleet/node-redis-budget.ts).
  const budget = startNodeRedisBudget(config, log, r.redis, enrol.nodeUsers, fleet.exports, controls.actions.store);
  // The console reads a job's Events back with the receiver's own access (KUBE_WATCH's, or the one operator identity uses).
  const eventAccess = kubeConfig ?? ops.access;
  let watches: KubeWatches | undefined;
  const ack = r.replicaAck;
  const app = createApp({
    redis: r.redis,
    prefix: config.queuePrefix,
    tokens: config.tokens,
    operatorAuth: ops.auth,
    authLimiter: ops.limiter,
    trustedProxyCidrs: config.trustedProxyCidrs,
    bodyLimit: config.bodyLimit,
    reader: new JobReader(j.jobs, j.likely),
    dispatcher: j.dispatcher,
    gate: j.gate,
    lookups,
    // With the API server's answers, a posted node recovery must agree with the Node's status.
    corroborate: kubeConfig !== undefined,
    kubeState: () => watches?.state(),
    connections: () => r.connections.states(),
    ...(ack ? { replicaAck: () => ack.status() } : {}),
    nodeRecoveryAlerts: new Set(config.nodeRecoveryAlerts),
    ...(enrol.enrolment ? { enrolment: enrol.enrolment } : {}),
    ...(revoke ? { revocation: revoke.revocation } : {}),
    ...(budget ? { redisBudget: { port: budget, budgetBytes: budget.budgetBytes } } : {}),
    // Agents' breaker slots (those given ENROL_URL ask here): where this receiver holds the roots.
    // Each answer relays the newest modes and pauses of the node's fields (src/core/controls/control-relay.ts).
    ...(trust.ring.scope === undefined && trust.ring.verify.size > 0
      ? { agentBreakers: { roots: trust.ring, caps: breakerCapsFromConfig(config), relay: (node: string) => controls.actions.store.newestRecords(node) } }
      : {}),
    eventTrust,
    metrics,
    fleetMetrics: fleet.exports,
    log,
    ...(opts.repeats ? { repeats: opts.repeats } : {}),
    retryAfterSeconds: 5,
    controls: {
      actions: controls.actions,
      retries: controls.retries,
      ...(eventAccess ? { events: new JobEventReader(eventAccess.makeApiClient(EventsV1Api)) } : {}),
      jobs: j.jobs,
      board: j.board,
      uiSessionTtlSeconds: config.uiSessionTtlSeconds,
      incidents: j.incidents,
      ...(records ? { recordsNamespace: records.namespace } : {}),
    },
  });
  const http = await listen(config, app, log);
  if (kubeConfig) {
    watches = await startReceiverWatches({
      kubeConfig,
      ingest: { lookups, dispatcher: j.dispatcher, gate: j.gate, corroborate: true },
      eventTrust,
      log,
      metrics,
      reconcileSeconds: config.kubeReconcileSeconds,
      revocation: revoke?.revocation,
      nodeUsers: enrol.nodeUsers,
      taintSightings: new TaintSightings(r.redis, config.queuePrefix, { ...trust.controls, allowUnsigned: trust.allowUnsigned }),
      remediations: config.nodeHealthCheck ? remediationWatchOptions(kubeConfig, j, controls.actions.store) : undefined,
    });
  }

  let closing: Promise<void> | undefined;
  return {
    url: http.url,
    server: http.server,
    connections: r.connections,
    // Stop taking requests, hand the Lease over now (not after it expires), stop the watches,
    // then the store, the node users, the script preload and Redis.
    close: () =>
      (closing ??= (async () => {
        controls.close();
        revoke?.close();
        await http.close();
        await records?.close();
        await fleet.close();
        await budget?.close();
        await watches?.close();
        await j.close();
        await enrol.close();
        scripts.close();
        await r.close();
      })()),
  };
}
