import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';

const TOKEN = 'bad-input-test-token-0123456789';

describe('bad input never becomes a job and never stops the receiver', () => {
  const prefix = uniquePrefix('bad');
  let receiver: Receiver;
  let redis: Redis;
  const jobKeys = async () => (await redis.keys(`${prefix}:vm-*:*`)).filter((k) => !/:(meta|events|id|stalled-check|wait|marker)$/.test(k));

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], bodyLimit: 4096 }));
  });
  afterAll(async () => {
    await receiver?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it.each([
    ['a body that is not JSON', '{"alerts": [', 400, /not valid JSON/],
    ['a JSON string instead of an object', '"hello"', 422, /\(body\): .*expected object/],
    ['alerts that is not an array', '{"alerts": {"status": "resolved"}}', 422, /^payload does not match the alertmanager schema: alerts:/],
    [
      'an alert status that is neither firing nor resolved',
      JSON.stringify({ alerts: [{ ...nodeNotReadyAlert('w', 'resolved'), status: 'gone' }] }),
      422,
      /alerts\[0\]\.status/,
    ],
    [
      'a label value that is not a string',
      JSON.stringify({ alerts: [{ ...nodeNotReadyAlert('w', 'resolved'), labels: { alertname: 'KubeNodeNotReady', node: 7 } }] }),
      422,
      /alerts\[0\]\.labels\.node/,
    ],
  ])('answers %s with a clear 4xx', async (_name, raw, status, message) => {
    const r = await post(`${receiver.url}/v1/alertmanager`, undefined, TOKEN, raw as string);
    expect(r.status).toBe(status);
    expect(r.json.error).toMatch(message as RegExp);
  });

  it('answers 413 for a body over the limit', async () => {
    const big = alertmanagerBody([{ ...nodeNotReadyAlert('worker-1', 'resolved'), annotations: { summary: 'big', description: 'x'.repeat(8192) } }]);
    const r = await post(`${receiver.url}/v1/alertmanager`, big, TOKEN);
    expect(r.status).toBe(413);
  });

  it('answers 401 without a token, with a wrong one, and with a prefix of the right one', async () => {
    const body = alertmanagerBody([nodeNotReadyAlert('worker-1', 'resolved')]);
    for (const token of [undefined, 'wrong-token-wrong-token-wrong', TOKEN.slice(0, -1)]) {
      const r = await post(`${receiver.url}/v1/alertmanager`, body, token);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  it.each([['sdb; rm -rf /'], ['../../etc'], ['$(reboot)'], ['Worker_1'], ['a'.repeat(300)]])('ignores node name %j with a reason', async (node) => {
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved', 'fpbad')]), TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.accepted).toEqual([]);
    expect(r.json.ignored[0].reason).toBe('invalid-node-name');
  });

  it.each([
    [
      'a device path outside /dev/disk',
      'MapVolume.EvalHostSymlinks failed for volume "local-pv-1" : lstat /etc/passwd: no such file or directory',
      'path-not-a-device-link',
    ],
    [
      'a traversal in the by-id path',
      'MapVolume.EvalHostSymlinks failed for volume "local-pv-1" : lstat /dev/disk/by-id/../../../etc/shadow: no such file or directory',
      'path-not-a-device-link',
    ],
    [
      'an rbd pool with a shell metacharacter',
      'MountVolume.WaitForAttach failed for volume "pvc-9" : rbd image kube;reboot/img is still being used',
      'invalid-name',
    ],
  ])('ignores an event with %s', async (_name, message, reason) => {
    const r = await post(
      `${receiver.url}/v1/events`,
      {
        metadata: { uid: `u-${reason}`, namespace: 'db' },
        involvedObject: { kind: 'Pod', namespace: 'db', name: 'pg-0' },
        reason: message.startsWith('Map') ? 'FailedMapVolume' : 'FailedMount',
        message,
        source: { component: 'kubelet', host: 'worker-1' },
      },
      TOKEN,
    );
    expect(r.status).toBe(202);
    expect(r.json.accepted).toEqual([]);
    expect(r.json.ignored[0].reason).toBe(reason);
  });

  it('has enqueued nothing and still serves a good request afterwards', async () => {
    expect(await jobKeys()).toEqual([]);
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('worker-ok', 'resolved')]), TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.accepted).toHaveLength(1);
  });
});
