import { Router } from 'express';
import type { RedisConnection } from '../../queues/redis.ts';
import type { Registry } from 'prom-client';
import { finishedExposition } from '../../catalogue/job-stats.ts';
import { noAgentExposition } from '../../queues/no-agent-record.ts';
import { queueDepthExposition, queueDepths } from '../../observability/queue-depth.ts';
import type { KubeWatchesState } from '../../kube/kube-watches.ts';
import { controlsExposition, controlsSummary } from '../../controls/status.ts';
import type { ControlsStore } from '../../controls/controls-store.ts';
import type { OperatorAuth } from '../../auth/operator-auth.ts';

// /healthz: the process answers. /readyz: Redis answers too (without it a webhook cannot be
// stored, so load balancers should send to another replica). /metrics: this receiver plus, on the
// one replica that exports them (`fleet`: the Lease's leader), the fleet-wide job results and
// controls kept in Redis.

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`no answer within ${ms} ms`)), ms).unref())]);

export function healthRoutes(redis: RedisConnection, prefix: string, registry: Registry, kubeState?: () => KubeWatchesState | undefined, controls?: ControlsStore, authenticated = true, operators?: OperatorAuth, fleet: () => boolean = () => true): Router {
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
  r.get('/healthz', (_req, res) => res.json({ status: 'ok' }));
  r.get('/readyz', async (_req, res) => {
    // Watches are reported, not gated on: webhooks are stored fine while a watch restarts.
    const kube = kubeState?.();
    const k = kube ? { kube: { ready: kube.ready, watches: kube.watches.map((w) => ({ name: w.name, status: w.status, restarts: w.restarts, ...(w.lastError ? { lastError: w.lastError } : {}) })), reconcile: kube.reconcile } } : {};
    try {
      await withTimeout(redis.ping(), 1000);
      // A pause or a tripped breaker is reported, not made unready: webhooks are still stored.
      const summary = controls ? await withTimeout(controlsSummary(redis, prefix, controls), 1000).catch(() => undefined) : undefined;
      const paused = summary ? summary.paused.cluster || summary.paused.nodes.length > 0 || summary.paused.runbooks.length > 0 : false;
      const c = summary ? { paused, controls: summary } : {};
      return res.json({ status: paused ? 'ready, paused' : 'ready', redis: 'ok', ...webhookAuth, ...operatorAuth(), ...c, ...k });
    } catch (err) {
      return res.status(503).json({ status: 'not ready', redis: (err as Error).message, ...webhookAuth, ...operatorAuth(), ...k });
    }
  });
  r.get('/metrics', async (_req, res) => {
    // This replica's own view of Redis, on every replica (a webhook it takes needs Redis).
    const redisUp = await withTimeout(redis.ping(), 1000).then(() => 1, () => 0);
    const own = [
      '# HELP volume_medic_redis_up 1 when this receiver\'s Redis answered a PING within 1 s at scrape time, else 0.',
      '# TYPE volume_medic_redis_up gauge',
      `volume_medic_redis_up ${redisUp}`,
      '',
    ].join('\n');
    let fleetWide = '';
    if (fleet() && redisUp === 1) {
      // Each part on its own deadline: a slow read of thousands of queues does not cost the rest.
      // Redis down: the receiver's own metrics are still worth serving (and show the 503s).
      const parts = await Promise.all([
        withTimeout(finishedExposition(redis, prefix), 1000),
        withTimeout(noAgentExposition(redis, prefix), 1000),
        controls ? withTimeout(controlsSummary(redis, prefix, controls), 1000).then(controlsExposition) : '',
        withTimeout(queueDepths(redis, prefix), 2000).then(queueDepthExposition),
      ].map((p) => Promise.resolve(p).catch(() => '')));
      fleetWide = parts.join('');
    }
    res.set('Content-Type', registry.contentType).send(`${await registry.metrics()}\n${own}${fleetWide}`);
  });
  return r;
}
