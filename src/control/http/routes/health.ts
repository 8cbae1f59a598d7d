import { Router } from 'express';
import type { RedisConnection } from '../../../adapters/redis/redis.ts';
import type { Registry } from 'prom-client';
import { finishedExposition } from '../../../adapters/stats/job-stats.ts';
import { noAgentExposition } from '../../../adapters/jobstore/no-agent-record.ts';
import { queueDepthExposition, queueDepths } from '../../../adapters/jobstore/queue-depth.ts';
import type { KubeWatchesState } from '../../watches/kube-watches.ts';
import { controlsExposition, controlsSummary } from '../../../adapters/controls/status.ts';
import type { ControlsStore } from '../../../adapters/controls/controls-store.ts';
import type { OperatorAuth } from '../../auth/operator-auth.ts';
import { connectionHealth, type ConnectionState } from '../../../adapters/redis/redis-connections.ts';
import type { ReplicaAckStatus } from '../../../adapters/redis/replica-ack.ts';
import { connectionsExposition, replicaAckExposition, replicaAckReport } from '../../../adapters/observability/redis-health.ts';
import { restrictionsExposition } from '../../../adapters/redis/node-restrictions.ts';

// /healthz: the process answers, and none of its Redis connections has kept ending past
// ENDED_RESTART_MS (it cannot recover by itself: let Kubernetes restart it). /readyz: Redis
// answers and every Redis connection of the process is ready (without them a webhook cannot be
// stored or acknowledged, so load balancers should send to another replica). /metrics: this
// receiver plus, on the one replica that exports them (`fleet`: the Lease's leader), the
// fleet-wide job results and controls kept in Redis.

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`no answer within ${ms} ms`)), ms).unref())]);

export interface HealthDeps {
  redis: RedisConnection;
  prefix: string;
  registry: Registry;
  kubeState?: (() => KubeWatchesState | undefined) | undefined;
  controls?: ControlsStore | undefined;
  /** The webhook routes need a token (else /readyz says they are open). Default true. */
  authenticated?: boolean;
  operators?: OperatorAuth | undefined;
  /** Does this replica export the fleet-wide series? Default: yes. */
  fleet?: (() => boolean) | undefined;
  /** This process's supervised Redis connections (src/adapters/redis/redis-connections.ts). */
  connections?: (() => ConnectionState[]) | undefined;
  /** REDIS_ACK_REPLICAS > 0: the replica acknowledgement's last outcome. */
  replicaAck?: (() => ReplicaAckStatus) | undefined;
}

// long because: one route per probe (/healthz, /readyz, /metrics), each with what it reports
export function healthRoutes(deps: HealthDeps): Router {
  const { redis, prefix, registry, kubeState, controls, operators } = deps;
  const authenticated = deps.authenticated ?? true;
  const fleet = deps.fleet ?? (() => true);
  const connections = (): ReturnType<typeof connectionHealth> => connectionHealth(deps.connections?.() ?? [], Date.now());
  const r = Router();
  // Said on every /readyz answer, so a dashboard or a probe log shows it, not only the start-up log.
  const webhookAuth = authenticated ? {} : { auth: 'none: no token, ALLOW_UNAUTHENTICATED (the webhook routes are open)' };
  // How operators are identified, and why they cannot be when they cannot (no Kubernetes access).
  const operatorAuth = (): Record<string, string> => {
    if (!operators) return {};
    if (operators.mode === 'insecure') return { operators: 'insecure: OPERATOR_AUTH=insecure, anyone reaching this port is an operator with every verb' };
    const why = operators.unavailable;
    return { operators: why ? `${operators.mode}: ${why}` : operators.mode };
  };
  r.get('/healthz', (_req, res) => {
    const c = connections();
    if (c.live) return res.json({ status: 'ok' });
    return res.status(503).json({ status: 'cannot recover: a Redis connection keeps ending', connections: c.report });
  });
  r.get('/readyz', async (_req, res) => {
    // Watches are reported, not gated on: webhooks are stored fine while a watch restarts.
    const kube = kubeState?.();
    const k = kube
      ? {
          kube: {
            ready: kube.ready,
            watches: kube.watches.map((w) => ({
              name: w.name,
              status: w.status,
              restarts: w.restarts,
              ...(w.lastError ? { lastError: w.lastError } : {}),
            })),
            reconcile: kube.reconcile,
          },
        }
      : {};
    const c = connections();
    const conns = deps.connections ? { connections: c.report } : {};
    // Missing replica acknowledgements are reported, not made unready: every replica of the
    // receiver shares the Redis, so all would leave the Service together and senders would get
    // refused connections instead of 503s that say why.
    const ack = deps.replicaAck ? replicaAckReport(deps.replicaAck()) : undefined;
    const a = ack ? { replicaAck: ack.report } : {};
    try {
      if (!c.ready)
        throw new Error(
          `connection(s) not ready: ${Object.entries(c.report)
            .filter(([, v]) => v !== 'ready')
            .map(([n, v]) => `${n} ${v}`)
            .join('; ')}`,
        );
      await withTimeout(redis.ping(), 1000);
      // A pause or a tripped breaker is reported, not made unready: webhooks are still stored.
      const summary = controls ? await withTimeout(controlsSummary(redis, prefix, controls), 1000).catch(() => undefined) : undefined;
      const paused = summary ? summary.paused.cluster || summary.paused.nodes.length > 0 || summary.paused.runbooks.length > 0 : false;
      const ctl = summary ? { paused, controls: summary } : {};
      const status = [paused ? 'ready, paused' : 'ready', ...(ack && !ack.ok ? [ack.short] : [])].join(', ');
      return res.json({ status, redis: 'ok', ...conns, ...a, ...webhookAuth, ...operatorAuth(), ...ctl, ...k });
    } catch (err) {
      return res.status(503).json({ status: 'not ready', redis: (err as Error).message, ...conns, ...a, ...webhookAuth, ...operatorAuth(), ...k });
    }
  });
  r.get('/metrics', async (_req, res) => {
    // This replica's own view of Redis, on every replica (a webhook it takes needs Redis).
    const redisUp = await withTimeout(redis.ping(), 1000).then(
      () => 1,
      () => 0,
    );
    const own =
      [
        "# HELP volume_medic_redis_up 1 when this receiver's Redis answered a PING within 1 s at scrape time, else 0.",
        '# TYPE volume_medic_redis_up gauge',
        `volume_medic_redis_up ${redisUp}`,
        '',
      ].join('\n') +
      connectionsExposition(deps.connections?.() ?? []) +
      (deps.replicaAck ? replicaAckExposition(deps.replicaAck()) : '');
    let fleetWide = '';
    if (fleet() && redisUp === 1) {
      // Each part on its own deadline: a slow read of thousands of queues does not cost the rest.
      // Redis down: the receiver's own metrics are still worth serving (and show the 503s).
      const parts = await Promise.all(
        [
          withTimeout(finishedExposition(redis, prefix), 1000),
          withTimeout(noAgentExposition(redis, prefix), 1000),
          controls ? withTimeout(controlsSummary(redis, prefix, controls), 1000).then(controlsExposition) : '',
          withTimeout(queueDepths(redis, prefix), 2000).then(queueDepthExposition),
          withTimeout(restrictionsExposition(redis, prefix), 1000),
        ].map((p) => Promise.resolve(p).catch(() => '')),
      );
      fleetWide = parts.join('');
    }
    res.set('Content-Type', registry.contentType).send(`${await registry.metrics()}\n${own}${fleetWide}`);
  });
  return r;
}
