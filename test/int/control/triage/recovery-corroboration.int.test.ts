import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { coreEvent, node } from '../../../support/kube-objects.ts';
import { post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { waitFor } from '../../../support/wait.ts';

// Issue 30, attack 7, through the real receiver with KUBE_WATCH on (the fake API server speaking
// the real protocol): the webhook token holder posts kubelet's NodeReady Event for nodes that did
// not recover. Only the one whose Node says it just became Ready becomes a job; the others are
// answered 202 with the reason, so the sender does not retry, and count nowhere towards a storm.

const TOKEN = 'corroboration-test-token-0123456789';
const BOOT = 'c0ffee00-1111-2222-3333-444455556666';
/** Six healthy nodes, Ready for days: what one node's kubelet credentials would claim recovered. */
const HEALTHY = ['h-1', 'h-2', 'h-3', 'h-4', 'h-5', 'h-6'];

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

describe("Node Events seen by the receiver's own Event watch (issue 44, item 4)", () => {
  let api: FakeKubeApi;
  let receiver: Receiver;
  let redis: Redis;
  let stored: TestJobs;
  const prefix = uniquePrefix('corrob-watch');
  const dir = mkdtempSync(join(tmpdir(), 'vm-corrob-watch-'));
  const before = process.env['KUBECONFIG'];
  const bootOf = (n: string) => `c0ffee00-1111-2222-3333-44445555660${n.slice(-1)}`;

  beforeAll(async () => {
    api = await startFakeKubeApi();
    for (const n of HEALTHY) api.put(node(n, 'True', bootOf(n), { readySince: new Date(Date.now() - 3 * 86_400_000) }));
    api.put(node('flapping', 'True', BOOT, { readySince: new Date(Date.now() - 3 * 86_400_000) }));
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, api.kubeConfig().exportConfig());
    process.env['KUBECONFIG'] = file;
    redis = new Redis(redisUrl());
    stored = testJobs(redis, prefix);
    receiver = await startReceiver(
      testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], kubeWatch: true, kubeReconcileSeconds: 0, fleetMetricsLeaseSeconds: 0 }),
    );
    await waitFor(
      'the watches listed',
      async () => (((await (await fetch(`${receiver.url}/readyz`)).json()) as { kube?: { ready?: boolean } }).kube?.ready === true ? true : undefined),
      15_000,
    );
  });
  afterAll(async () => {
    await stored?.close();
    redis?.disconnect();
    await receiver?.close();
    await api?.close();
    if (before === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = before;
    rmSync(dir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  const jobsOf = async (n: string) => stored.list(nodeQueueName(n), ['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized']);
  const ignoredByWatch = async (): Promise<number> => {
    const m = /volume_medic_signals_ignored_total\{source="k8s-watch-event",reason="node-status-disagrees"\} (\d+)/.exec(
      await (await fetch(`${receiver.url}/metrics`)).text(),
    );
    return Number(m?.[1] ?? 0);
  };
  /** kubelet's Node Event, as root on any node can create it in `default` with that node's kubelet credentials. */
  const nodeEvent = (n: string, i: number, reason: 'NodeReady' | 'Rebooted', message: string) =>
    coreEvent({
      name: `${n}.${reason}.${i}`,
      uid: `00000000-0000-4000-9000-0000000000${String(i).padStart(2, '0')}`,
      reason,
      type: 'Normal',
      message,
      involved: { kind: 'Node', name: n },
      host: n,
    });

  it('makes no job of six NodeReady Events for six healthy nodes, nor of a Rebooted naming another boot: ignored with node-status-disagrees', async () => {
    for (const [i, n] of HEALTHY.entries()) api.put(nodeEvent(n, i + 1, 'NodeReady', `Node ${n} status is now: NodeReady`));
    api.put(nodeEvent('h-1', 7, 'Rebooted', 'Node h-1 has been rebooted, boot id: 0badb00t-0000-4000-8000-000000000001'));
    // Settled once each of the seven became a job or was ignored.
    const made = async () => (await Promise.all(HEALTHY.map(jobsOf))).reduce((n, j) => n + j.length, 0);
    await waitFor('seven watched Events triaged', async () => ((await ignoredByWatch()) + (await made()) >= 7 ? true : undefined), 15_000);
    expect(await ignoredByWatch()).toBe(7);
    for (const n of HEALTHY) expect(await jobsOf(n), n).toEqual([]);
    // No job, so nothing for the storm breaker to count, and nothing tripped.
    expect(await redis.hgetall(controlKeys(prefix).tripped)).toEqual({});
  });

  it("still makes the job of a real recovery seen through the watch (Ready minutes ago, the Event on that boot), and of the Node watch's own Ready transition", async () => {
    api.put(node('back-now', 'True', BOOT, { readySince: new Date(Date.now() - 2 * 60_000) }));
    api.put(nodeEvent('back-now', 8, 'Rebooted', `Node back-now has been rebooted, boot id: ${BOOT}`));
    api.put(nodeEvent('back-now', 9, 'NodeReady', 'Node back-now status is now: NodeReady'));
    const back = await waitFor('the recovery stored', async () => {
      const j = await jobsOf('back-now');
      return j.length > 0 ? j : undefined;
    });
    expect(back[0]!.data).toMatchObject({ runbook: 'residual-multipath-cleanup', target: { node: 'back-now' }, bootId: BOOT });
    // Corroborated as a watched Event; stored as k8s-watch, which agents of the release before know.
    expect(back[0]!.data.evidence[0].source).toBe('k8s-watch');
    expect(back[0]!.data.evidence[0].summary).toMatch(/rebooted|NodeReady/);

    api.put(node('flapping', 'Unknown', BOOT));
    api.put(node('flapping', 'True', BOOT));
    const flapped = await waitFor("the Node watch's job stored", async () => {
      const j = await jobsOf('flapping');
      return j.length > 0 ? j : undefined;
    });
    expect(flapped[0]!.data.evidence[0]).toMatchObject({ source: 'k8s-watch', summary: 'Node flapping Ready Unknown -> True (watch)' });
    // The two Events of one boot are one job.
    expect(await jobsOf('back-now')).toHaveLength(1);
  });
});
