import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../src/control/receiver.ts';
import { testConfig } from '../support/config.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../testkit/fake-kube-api.ts';
import { coreEvent, node } from '../support/kube-objects.ts';
import { post } from '../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';

// Issue 30, attack 7, through the real receiver with KUBE_WATCH on (the fake API server speaking
// the real protocol): the webhook token holder posts kubelet's NodeReady Event for nodes that did
// not recover. Only the one whose Node says it just became Ready becomes a job; the others are
// answered 202 with the reason, so the sender does not retry, and count nowhere towards a storm.

const TOKEN = 'corroboration-test-token-0123456789';
const BOOT = 'c0ffee00-1111-2222-3333-444455556666';

describe('posted node recoveries with cluster access', () => {
  let api: FakeKubeApi;
  let receiver: Receiver;
  const prefix = uniquePrefix('corrob');
  const dir = mkdtempSync(join(tmpdir(), 'vm-corrob-'));
  const before = process.env['KUBECONFIG'];

  beforeAll(async () => {
    api = await startFakeKubeApi();
    api.put(node('just-back', 'True', BOOT, { readySince: new Date(Date.now() - 2 * 60_000) }));
    api.put(node('up-for-days', 'True', BOOT, { readySince: new Date(Date.now() - 3 * 86_400_000) }));
    api.put(node('still-down', 'Unknown', BOOT));
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, api.kubeConfig().exportConfig());
    process.env['KUBECONFIG'] = file;
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        tokens: [TOKEN],
        kubeWatch: true,
        kubeReconcileSeconds: 0,
        fleetMetricsLeaseSeconds: 0,
      }),
    );
  });
  afterAll(async () => {
    await receiver?.close();
    await api?.close();
    if (before === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = before;
    rmSync(dir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  const nodeReady = (name: string, i: number) =>
    coreEvent({
      name: `${name}.18${i}`,
      uid: `00000000-0000-4000-8000-00000000000${i}`,
      reason: 'NodeReady',
      type: 'Normal',
      message: `Node ${name} status is now: NodeReady`,
      involved: { kind: 'Node', name },
      host: name,
    });

  it('stores the recovery the Node agrees with, and ignores the rest with the reason', async () => {
    const r = await post(
      `${receiver.url}/v1/events`,
      [nodeReady('just-back', 1), nodeReady('up-for-days', 2), nodeReady('still-down', 3), nodeReady('no-such-node', 4)],
      TOKEN,
    );
    expect(r.status).toBe(202);
    expect(r.json.accepted.map((a: { node: string }) => a.node)).toEqual(['just-back']);
    const why = Object.fromEntries(
      r.json.ignored.filter((i: { reason: string }) => i.reason === 'node-status-disagrees').map((i: { detail: string }) => [i.detail.split(' ')[1], i.detail]),
    );
    expect(why['up-for-days']).toMatch(/has been Ready since/);
    expect(why['still-down']).toMatch(/not Ready \(Ready Unknown\)/);
    expect(Object.values(why).join('\n')).toMatch(/the cluster has no Node no-such-node/);
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(metrics).toMatch(/volume_medic_signals_ignored_total\{source="k8s-event",reason="node-status-disagrees"\} 3/);
  });
});
