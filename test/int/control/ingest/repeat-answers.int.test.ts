import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { sumMetric } from '../../../support/alertmanager.ts';

// An Alertmanager body whose alerts come again exactly as written is answered from what they
// were triaged to the first time, only while the dispatcher still knows every one of their jobs
// and only when the rest of the body is valid (src/control/ingest/repeat-answers.ts). The answer must be
// exactly what the full path answers; anything the dispatcher would not answer from memory
// takes the full path.

const TOKEN = 'repeat-answers-test-token-0123';

/** A body with a job, a firing alert and an alert we do not act on: accepted and ignored parts. */
const body = (fp: string) =>
  JSON.stringify(
    alertmanagerBody([
      nodeNotReadyAlert('worker-r1', 'resolved', `${fp}a`),
      nodeNotReadyAlert('worker-r2', 'firing', `${fp}b`),
      {
        ...nodeNotReadyAlert('worker-r3', 'resolved', `${fp}c`),
        labels: { ...nodeNotReadyAlert('worker-r3', 'resolved').labels, alertname: 'SomethingElse' },
      },
      nodeNotReadyAlert('worker-r4', 'resolved', `${fp}d`),
    ]),
  );

const metric = async (url: string, name: string): Promise<number> => sumMetric(await (await fetch(`${url}/metrics`)).text(), name);

describe('repeat answers', () => {
  const prefix = uniquePrefix('rep');
  const shortPrefix = uniquePrefix('reps');
  let receiver: Receiver;
  let short: Receiver;
  let redis: Redis;

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN] }));
    // A dedup window shorter than the clock margin: the dispatcher never answers from memory.
    short = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: shortPrefix, tokens: [TOKEN], dedupWindowSeconds: 30 }));
  });
  afterAll(async () => {
    await receiver?.close();
    await short?.close();
    await dropPrefix(prefix);
    await dropPrefix(shortPrefix);
    redis?.disconnect();
  });

  it('answers a body whose alerts come again as written as the full path answers it, without triaging them again', async () => {
    const alerts = JSON.parse(body('fprep1')).alerts as unknown[];
    const raw = JSON.stringify({ ...JSON.parse(body('fprep1')), externalURL: 'http://alertmanager-0:9093' });
    const first = await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, raw);
    expect(first.status).toBe(202);
    expect(first.json.accepted.map((a: { deduplicated: boolean }) => a.deduplicated)).toEqual([false, false]);
    const repeats = () => metric(receiver.url, 'volume_medic_webhook_repeat_answers_total');
    const repeatsBefore = await repeats();
    const ignoredBefore = await metric(receiver.url, 'volume_medic_signals_ignored_total');
    const dedupBefore = await metric(receiver.url, 'volume_medic_jobs_deduplicated_total');
    // Byte for byte.
    const again = await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, raw);
    expect(await repeats()).toBe(repeatsBefore + 1);
    // The other Alertmanager of an HA pair: another externalURL, other whitespace outside the alerts.
    const peerBody = `\n ${JSON.stringify({ ...JSON.parse(raw), externalURL: 'http://alertmanager-1:9093', truncatedAlerts: 0 })} `;
    const peer = await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, peerBody);
    expect(await repeats()).toBe(repeatsBefore + 2);
    // The same alerts written differently take the full path: the answer to compare with.
    const fullBody = JSON.stringify({ ...JSON.parse(raw), alerts }, null, 2);
    const full = await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, fullBody);
    expect(await repeats()).toBe(repeatsBefore + 2);
    for (const r of [again, peer, full]) expect(r.status).toBe(202);
    expect(again.json).toEqual(full.json);
    expect(peer.json).toEqual(full.json);
    expect(full.json.accepted).toHaveLength(2);
    expect(full.json.accepted.every((a: { deduplicated: boolean }) => a.deduplicated)).toBe(true);
    expect(full.json.ignored.map((i: { reason: string }) => i.reason)).toEqual(['alert-still-firing', 'alert-not-relevant']);
    // Ignored reasons are counted on a repeat answer too, as the full path counts them.
    expect(await metric(receiver.url, 'volume_medic_signals_ignored_total')).toBe(ignoredBefore + 6);
    // And every job of each answer counted as deduplicated, from memory or not.
    expect(await metric(receiver.url, 'volume_medic_jobs_deduplicated_total')).toBe(dedupBefore + 6);
    // Alerts that stored nothing new are not remembered: sent again, they take the full path.
    expect((await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, fullBody)).json).toEqual(full.json);
    expect(await repeats()).toBe(repeatsBefore + 2);
  });

  it('still refuses a body whose alerts are known when the rest of it is not a valid payload', async () => {
    const raw = body('fprep3');
    expect((await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, raw)).status).toBe(202);
    const repeatsBefore = await metric(receiver.url, 'volume_medic_webhook_repeat_answers_total');
    for (const bad of [{ truncatedAlerts: -1 }, { status: 'sleeping' }, { commonLabels: { a: 1 } }]) {
      const r = await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, JSON.stringify({ ...JSON.parse(raw), ...bad }));
      expect(r.status).toBe(422);
    }
    expect(await metric(receiver.url, 'volume_medic_webhook_repeat_answers_total')).toBe(repeatsBefore);
    expect((await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, raw)).status).toBe(202);
    expect(await metric(receiver.url, 'volume_medic_webhook_repeat_answers_total')).toBe(repeatsBefore + 1);
  });

  it('never answers from a body when the dispatcher would not answer its jobs from memory', async () => {
    const raw = body('fprep2');
    expect((await post(`${short.url}/v1/alertmanager`, undefined, TOKEN, raw)).status).toBe(202);
    const again = await post(`${short.url}/v1/alertmanager`, undefined, TOKEN, raw);
    expect(again.status).toBe(202);
    // Folded by BullMQ, read from Redis: the full path.
    expect(again.json.accepted.every((a: { deduplicated: boolean }) => a.deduplicated)).toBe(true);
    expect(await metric(short.url, 'volume_medic_webhook_repeat_answers_total')).toBe(0);
    // The job deleted behind its back: the identical body stores it again.
    const key = again.json.accepted[0].key as string;
    await redis.del(`${shortPrefix}:vm-node-{worker-r1}:${key}`);
    const third = await post(`${short.url}/v1/alertmanager`, undefined, TOKEN, raw);
    expect(third.json.accepted[0]).toMatchObject({ key, deduplicated: false });
    expect(await redis.exists(`${shortPrefix}:vm-node-{worker-r1}:${key}`)).toBe(1);
  });

  it('does not answer Kubernetes Events from the body (their triage can depend on the cluster)', async () => {
    const ev = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'worker-r5.rebooted', namespace: 'default', uid: 'e0a1b2c3-0000-4000-8000-000000000001' },
      involvedObject: { kind: 'Node', name: 'worker-r5', uid: 'worker-r5' },
      reason: 'Rebooted',
      type: 'Warning',
      message: 'Node worker-r5 has been rebooted, boot id: 0b5d3a8e-8d0e-4c5e-9a3b-0123456789ab',
      source: { component: 'kubelet', host: 'worker-r5' },
      count: 1,
      firstTimestamp: '2026-12-02T10:00:00Z',
      lastTimestamp: '2026-12-02T10:00:00Z',
    });
    const before = await metric(receiver.url, 'volume_medic_webhook_repeat_answers_total');
    for (let i = 0; i < 2; i++) expect((await post(`${receiver.url}/v1/events`, undefined, TOKEN, ev)).status).toBe(202);
    expect(await metric(receiver.url, 'volume_medic_webhook_repeat_answers_total')).toBe(before);
  });
});
