import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { startReceiver, type Receiver } from '../../src/control/receiver.ts';
import { startPrivateRedis, type PrivateRedis } from '../support/redis-server.ts';
import {
  alertmanagerAvailable,
  ALERTMANAGER_BIN,
  sleep,
  startAlertmanager,
  sumMetric,
  waitFor,
  type PostableAlert,
  type RunningAlertmanager,
} from '../support/alertmanager.ts';
import { testConfig } from '../support/config.ts';

// Redis goes away for 20 s while a real Alertmanager keeps sending. The receiver must answer
// 503 (never 202 for a job it did not store), Alertmanager retries, and once Redis is back every
// incident has its job, none twice. The Redis is a private redis-server with an fsynced AOF, so
// stopping and starting it is a restart that keeps what was stored, as in a real deployment.

const TOKEN = 'faults-redis-away-token-0123456789';
const ALL_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed', 'paused'] as const;
const OUTAGE_MS = 20_000;

const startsAt = new Date(Date.now() - 30 * 60_000).toISOString();
function nodeNotReady(node: string, state: 'firing' | 'resolved'): PostableAlert {
  return {
    labels: { alertname: 'KubeNodeNotReady', node, condition: 'Ready', severity: 'warning', job: 'kube-state-metrics' },
    annotations: { summary: 'Node is not ready.' },
    startsAt,
    endsAt: new Date(state === 'firing' ? Date.now() + 30 * 60_000 : Date.now() - 1_000).toISOString(),
  };
}

describe.skipIf(!alertmanagerAvailable())(`Redis away for ${OUTAGE_MS / 1000} s under a real Alertmanager (${ALERTMANAGER_BIN})`, () => {
  let redis: PrivateRedis;
  let receiver: Receiver;
  let am: RunningAlertmanager;
  let admin: Redis;
  const prefix = `vmfault-${randomBytes(3).toString('hex')}`;
  const run = randomBytes(2).toString('hex');
  const before = Array.from({ length: 3 }, (_, i) => `before-${run}-${i}`);
  const during = Array.from({ length: 6 }, (_, i) => `during-${run}-${i}`);

  beforeAll(async () => {
    redis = await startPrivateRedis({ persistent: true });
    receiver = await startReceiver(testConfig({ redisUrl: redis.url, queuePrefix: prefix, tokens: [TOKEN], enqueueTimeoutMs: 1_000 }));
    am = await startAlertmanager({ webhookUrl: `${receiver.url}/v1/alertmanager`, token: TOKEN, groupWait: '1s', groupInterval: '1s' });
  });
  afterAll(async () => {
    await am?.stop();
    await receiver?.close();
    admin?.disconnect();
    await redis?.destroy();
  });

  const metric = async (name: string, labels: Record<string, string>) => sumMetric(await (await fetch(`${receiver.url}/metrics`)).text(), name, labels);

  async function jobsOf(node: string): Promise<string[]> {
    const q = new Queue(nodeQueueName(node), { connection: admin, prefix });
    try {
      return (await q.getJobs([...ALL_STATES])).map((j) => j.id!);
    } finally {
      await q.close();
    }
  }

  /** Alertmanager only notifies a resolution it notified as firing first (the receiver ignores firing). */
  async function fire(nodes: string[]): Promise<void> {
    const seen = await metric('volume_medic_signals_ignored_total', { source: 'alertmanager', reason: 'alert-still-firing' });
    await am.postAlerts(nodes.map((n) => nodeNotReady(n, 'firing')));
    await waitFor(
      'firing notifications',
      async () => (await metric('volume_medic_signals_ignored_total', { source: 'alertmanager', reason: 'alert-still-firing' })) >= seen + nodes.length,
      20_000,
      () => am.log().slice(-3000),
    );
  }

  it('answers 503 while Redis is away, and every incident gets exactly one job after it returns', async () => {
    admin = new Redis(redis.url, { maxRetriesPerRequest: null, lazyConnect: true });
    admin.on('error', () => {});
    await admin.connect();
    await fire([...before, ...during]);

    // Before the outage: stored normally.
    await am.postAlerts(before.map((n) => nodeNotReady(n, 'resolved')));
    await waitFor(
      'jobs for the incidents before the outage',
      async () => (await Promise.all(before.map(jobsOf))).every((j) => j.length === 1),
      20_000,
      () => am.log().slice(-3000),
    );

    // Redis goes away; new incidents resolve while it is gone.
    admin.disconnect();
    await redis.stop();
    const failedBefore = await am.metric('alertmanager_notifications_failed_total', { integration: 'webhook' });
    await am.postAlerts(during.map((n) => nodeNotReady(n, 'resolved')));
    await waitFor(
      'the receiver to answer 503 to Alertmanager',
      async () => (await metric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'unavailable' })) >= 1,
      15_000,
      () => am.log().slice(-3000),
    );
    await sleep(OUTAGE_MS);
    const unavailable = await metric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'unavailable' });
    const failedDuring = (await am.metric('alertmanager_notifications_failed_total', { integration: 'webhook' })) - failedBefore;
    // Alertmanager saw the failures and kept retrying through the outage.
    expect(unavailable).toBeGreaterThanOrEqual(2);
    expect(failedDuring).toBeGreaterThanOrEqual(1);

    // Redis returns with its data.
    await redis.start();
    await admin.connect();
    await waitFor(
      'jobs for every incident after Redis returned',
      async () => (await Promise.all([...before, ...during].map(jobsOf))).every((j) => j.length >= 1),
      60_000,
      () => am.log().slice(-3000),
    );
    // Let Alertmanager's retries settle, then: one job per incident, none twice, nothing else.
    await sleep(3_000);
    const perNode = await Promise.all([...before, ...during].map(async (n) => [n, await jobsOf(n)] as const));
    for (const [node, ids] of perNode) expect(ids, `jobs of ${node}`).toHaveLength(1);
    const queues = new Set((await admin.keys(`${prefix}:vm-node-*:meta`)).map((k) => k.split(':')[1]));
    expect([...queues].sort()).toEqual([...before, ...during].map(nodeQueueName).sort());
    const stored = await metric('volume_medic_jobs_enqueued_total', { runbook: 'residual-multipath-cleanup' });
    expect(stored).toBe(before.length + during.length);
    console.log(
      `redis away ${OUTAGE_MS / 1000} s: receiver answered 503 ${unavailable} times, Alertmanager counted ${failedDuring} failed notifications, ${before.length + during.length} incidents -> ${perNode.length} jobs, one each`,
    );
  });
});
