import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import {
  ALERTMANAGER_BIN,
  alertmanagerAvailable,
  sleep,
  startAlertmanager,
  sumMetric,
  waitFor,
  type PostableAlert,
  type RunningAlertmanager,
} from '../../../support/alertmanager.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// A real Alertmanager posts to the receiver: a firing KubeNodeNotReady is ignored, the resolved
// one becomes exactly one residual-multipath-cleanup job on the node's queue, a second copy of
// the notification (an HA peer) folds into it, and a wrong token is refused and counted.
//
// How Alertmanager (0.25, Debian 12) behaves, and what the test relies on:
// - a group's first notification waits group_wait, or goes out at once when the alert's startsAt
//   is already older than group_wait (as with Prometheus' `for: 15m` alerts); later ones go out
//   on group_interval ticks;
// - a resolved notification is only sent for a group whose *firing* notification was delivered
//   (the notification log has an entry); so the test waits for the firing delivery before it
//   resolves the alert, and with a wrong token no resolved notification is ever sent (not even
//   after the token is fixed: that recovery is lost);
// - a webhook that answers 4xx fails without retry inside that flush; 5xx is retried. While the
//   alert fires and nothing was delivered, every group_interval tick tries again;
// - firing alerts arrive with endsAt "0001-01-01T00:00:00Z"; resolved ones with the real endsAt;
// - a resolved notification is never repeated by the same Alertmanager; copies come from HA peers;
// - alerts posted without endsAt resolve by themselves after resolve_timeout, so the alerts here
//   carry endsAt like Prometheus does (firing: in the future; resolved: in the past).

const TOKEN = 'alertmanager-int-test-token-0123456789';
const RUNBOOK = 'residual-multipath-cleanup';
const NOTIFY_TIMEOUT_MS = 10_000;

const inCi = !!process.env['CI'] && process.env['CI'] !== 'false';
const available = alertmanagerAvailable();
if (!available && !inCi) {
  console.warn(
    `SKIPPING test/int/control/sources/alertmanager.int.test.ts: ${ALERTMANAGER_BIN} not found (apt-get install prometheus-alertmanager, or set ALERTMANAGER_BIN). In CI (CI set) this fails instead.`,
  );
}

const nodeName = (what: string) => `am-${what}-${randomBytes(3).toString('hex')}`;

function nodeNotReady(node: string, startsAt: Date, endsAt: Date): PostableAlert {
  return {
    labels: {
      alertname: 'KubeNodeNotReady',
      node,
      condition: 'Ready',
      severity: 'warning',
      job: 'kube-state-metrics',
      namespace: 'monitoring',
    },
    annotations: { summary: 'Node is not ready.', description: `${node} has been unready for more than 15 minutes.` },
    startsAt: startsAt.toISOString(),
    endsAt: endsAt.toISOString(),
    generatorURL: 'http://prometheus.test:9090/graph?g0.expr=kube_node_status_condition%7Bcondition%3D%22Ready%22%2Cstatus%3D%22true%22%7D+%3D%3D+0',
  };
}

describe('real Alertmanager -> receiver', () => {
  if (!available) {
    if (inCi) {
      it('has prometheus-alertmanager installed (required when CI is set)', () => {
        throw new Error(`${ALERTMANAGER_BIN} not found: CI must install Debian's prometheus-alertmanager (.ci/run does)`);
      });
    } else {
      it.skip(`needs ${ALERTMANAGER_BIN} (apt-get install prometheus-alertmanager)`, () => {});
    }
    return;
  }

  const prefix = uniquePrefix('am');
  let redis: Redis;
  let receiver: Receiver;
  const managers: RunningAlertmanager[] = [];
  let storedJobs: TestJobs;
  const receiverMetric = async (name: string, labels: Record<string, string>) => sumMetric(await (await fetch(`${receiver.url}/metrics`)).text(), name, labels);
  const am = async (token: string) => {
    const m = await startAlertmanager({
      webhookUrl: `${receiver.url}/v1/alertmanager`,
      token,
      groupWait: '1s',
      groupInterval: '1s',
      resolveTimeout: '5m',
    });
    managers.push(m);
    return m;
  };
  const logs = () => managers.map((m, i) => `--- alertmanager #${i} (${m.url}) log tail ---\n${m.log().slice(-3000)}`).join('\n');
  /** Node queues of this test's prefix, other than `except`'s, that hold any job. */
  const otherNodeQueuesWithJobs = async (except: string) => {
    const names = new Set((await redis.keys(`${prefix}:vm-node-*`)).map((k) => k.slice(prefix.length + 1).split(':')[0]!));
    names.delete(nodeQueueName(except));
    const withJobs: string[] = [];
    for (const n of names) {
      if ((await storedJobs.list(n)).length > 0) withJobs.push(n);
    }
    return withJobs;
  };

  beforeAll(async () => {
    redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    storedJobs = testJobs(redis, prefix);
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], operatorAuth: 'insecure' }));
  });

  afterAll(async () => {
    // Everything the test started, even when it failed half-way.
    await Promise.allSettled(managers.map((m) => m.stop()));
    await storedJobs?.close();
    await receiver?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it('a resolved KubeNodeNotReady from Alertmanager becomes one job on the node queue; firing does not; an HA copy folds into it', async () => {
    const node = nodeName('node');
    const q = nodeQueueName(node);
    const [primary, peer] = await Promise.all([am(TOKEN), am(TOKEN)]);
    const startsAt = new Date(Date.now() - 20 * 60_000);
    const firing = nodeNotReady(node, startsAt, new Date(Date.now() + 10 * 60_000));

    // 1. Firing: both Alertmanagers (an unclustered HA pair, both fed by "Prometheus") notify.
    await Promise.all([primary.postAlerts([firing]), peer.postAlerts([firing])]);
    const [active] = await primary.alerts(`node="${node}"`);
    expect(active?.status.state).toBe('active');
    const fingerprint = active!.fingerprint;
    expect(fingerprint).toMatch(/^[0-9a-f]{16}$/);

    await waitFor(
      'both Alertmanagers to deliver the firing notification',
      async () => (await receiverMetric('volume_medic_signals_ignored_total', { source: 'alertmanager', reason: 'alert-still-firing' })) >= 2,
      NOTIFY_TIMEOUT_MS,
      logs,
    );
    expect(await primary.metric('alertmanager_notifications_total', { integration: 'webhook' })).toBeGreaterThanOrEqual(1);
    expect(await primary.metric('alertmanager_notifications_failed_total', { integration: 'webhook' })).toBe(0);
    expect(await storedJobs.list(q)).toHaveLength(0);
    expect(await receiverMetric('volume_medic_jobs_enqueued_total', { runbook: RUNBOOK })).toBe(0);

    // 2. Resolved (same labels and startsAt, endsAt in the past), through the primary only.
    const resolved = { ...firing, endsAt: new Date(Date.now() - 1000).toISOString() };
    await primary.postAlerts([resolved]);
    const jobs = await waitFor(
      `a ${RUNBOOK} job on queue ${nodeQueueName(node)}`,
      async () => {
        const js = await storedJobs.list(q);
        return js.length > 0 ? js : undefined;
      },
      NOTIFY_TIMEOUT_MS,
      logs,
    );
    expect(jobs).toHaveLength(1);
    const job = jobs[0]!;
    expect(job.data).toMatchObject({ runbook: RUNBOOK, target: { node }, key: job.id });
    // Evidence: the alert exactly as Alertmanager sent it (its fingerprint, resolved, our startsAt).
    const evidence = job.data.evidence[0];
    expect(evidence.source).toBe('alertmanager');
    expect(evidence.raw).toMatchObject({ status: 'resolved', fingerprint, generatorURL: firing.generatorURL, labels: firing.labels });
    expect(Date.parse(evidence.raw.startsAt)).toBe(startsAt.getTime());
    expect(Date.parse(evidence.raw.endsAt)).toBeLessThan(Date.now());
    expect(await otherNodeQueuesWithJobs(node)).toEqual([]);

    // The same job through the receiver's API.
    const listed = (await (await fetch(`${receiver.url}/v1/jobs?node=${node}`)).json()) as { jobs: { id: string }[] };
    expect(listed.jobs.map((j) => j.id)).toEqual([job.id]);

    // 3. Repeats: the HA peer sends its own resolved notification for the same alert. It must
    //    reach the receiver (Alertmanager counts it, the receiver counts a dedup) and stay one job.
    const peerSentBefore = await peer.metric('alertmanager_notifications_total', { integration: 'webhook' });
    await peer.postAlerts([resolved]);
    await waitFor(
      'the HA peer to deliver its resolved notification, folded into the existing job',
      async () => (await receiverMetric('volume_medic_jobs_deduplicated_total', { runbook: RUNBOOK })) >= 1,
      NOTIFY_TIMEOUT_MS,
      logs,
    );
    expect(await peer.metric('alertmanager_notifications_total', { integration: 'webhook' })).toBeGreaterThan(peerSentBefore);
    // Alertmanager itself does not repeat a resolved notification: re-posting it to the primary
    // changes nothing (its notification log already has it).
    const primarySent = await primary.metric('alertmanager_notifications_total', { integration: 'webhook' });
    await primary.postAlerts([resolved]);
    await sleep(2_500);
    expect(await primary.metric('alertmanager_notifications_total', { integration: 'webhook' })).toBe(primarySent);

    const after = await storedJobs.list(q);
    expect(after.map((j) => j.id)).toEqual([job.id]);
    expect(await receiverMetric('volume_medic_jobs_enqueued_total', { runbook: RUNBOOK })).toBe(1);
    expect(await receiverMetric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'unauthorized' })).toBe(0);
  });

  it('an Alertmanager configured with the wrong token makes no job and is counted as unauthorized', async () => {
    const node = nodeName('badtoken');
    const q = nodeQueueName(node);
    const wrong = await am('wrong-token-wrong-token-wrong-token');
    const unauthorizedBefore = await receiverMetric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'unauthorized' });
    const acceptedBefore = await receiverMetric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'accepted' });
    const startsAt = new Date(Date.now() - 20 * 60_000);
    const firing = nodeNotReady(node, startsAt, new Date(Date.now() + 10 * 60_000));

    await wrong.postAlerts([firing]);
    await waitFor(
      'the receiver to refuse the firing notification',
      async () => (await receiverMetric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'unauthorized' })) > unauthorizedBefore,
      NOTIFY_TIMEOUT_MS,
      logs,
    );
    // Alertmanager saw the 401 as a failed, non-retryable notification.
    await waitFor(
      'Alertmanager to count the failed notification',
      async () => (await wrong.metric('alertmanager_notifications_failed_total', { integration: 'webhook' })) >= 1,
      NOTIFY_TIMEOUT_MS,
      logs,
    );
    expect(wrong.log()).toMatch(/unexpected status code 401/);

    await wrong.postAlerts([{ ...firing, endsAt: new Date(Date.now() - 1000).toISOString() }]);
    await waitFor(
      'Alertmanager to take the resolved alert',
      async () => (await wrong.metric('alertmanager_alerts_received_total', { status: 'resolved' })) >= 1,
      NOTIFY_TIMEOUT_MS,
      logs,
    );
    // Several group_interval ticks: no resolved notification gets through (Alertmanager does not
    // even send one, since the firing one was never delivered), so no job.
    await sleep(3_000);
    expect(await storedJobs.list(q)).toHaveLength(0);
    expect(await receiverMetric('volume_medic_webhooks_total', { source: 'alertmanager', outcome: 'accepted' })).toBe(acceptedBefore);
    expect(await otherNodeQueuesWithJobs('(none)')).not.toContain(nodeQueueName(node));
  });
});
