import { describe, expect, it } from 'vitest';
import { NodeReadyTracker, nodeRecoveredSignal, observeNode, recentlyRecovered } from '../../../../src/control/watches/node-ready.ts';
import { idempotencyKey } from '../../../../src/core/catalogue/idempotency-keys.ts';
import { classifyEvent } from '../../../../src/control/sources/classify-event.ts';
import { DEFAULT_EVENT_TRUST } from '../../../../src/control/sources/event-trust.ts';
import { KubeEventPayload } from '../../../../src/control/sources/kube-event.ts';
import { triage } from '../../../../src/control/triage/triage.ts';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { CLUSTER_FIXTURE } from '../../../support/lookups-contract.ts';
import { readFileSync } from 'node:fs';

const worker1 = CLUSTER_FIXTURE.items.find((o) => o['kind'] === 'Node' && o['metadata'].name === 'worker-1')!;
const withReady = (status: string, bootID = worker1['status'].nodeInfo.bootID) => ({
  ...worker1,
  status: {
    ...worker1['status'],
    nodeInfo: { ...worker1['status'].nodeInfo, bootID },
    conditions: worker1['status'].conditions.map((c: any) => (c.type === 'Ready' ? { ...c, status } : c)),
  },
});

describe('node recovery from Node objects', () => {
  it('reads name, Ready status, boot id and transition time from a real Node', () => {
    expect(observeNode(worker1)).toMatchObject({
      name: 'worker-1',
      ready: 'True',
      bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26',
      readySince: Date.parse('2025-03-14T06:14:02Z'),
    });
  });

  it('says recovered only on False/Unknown -> True, not on first sight or on heartbeats', () => {
    const t = new NodeReadyTracker();
    expect(t.observe(observeNode(withReady('True'))!)).toBeUndefined();
    expect(t.observe(observeNode(withReady('True'))!)).toBeUndefined();
    expect(t.observe(observeNode(withReady('Unknown'))!)).toBeUndefined();
    expect(t.observe(observeNode(withReady('False'))!)).toBeUndefined();
    expect(t.observe(observeNode(withReady('True'))!)).toEqual({ why: 'ready-again', from: 'False' });
    expect(t.observe(observeNode(withReady('True'))!)).toBeUndefined();
  });

  it('says recovered when the boot id changed even if NotReady was never seen', () => {
    const t = new NodeReadyTracker();
    t.observe(observeNode(withReady('True', 'boot-a'))!);
    expect(t.observe(observeNode(withReady('True', 'boot-b'))!)).toEqual({ why: 'rebooted', previousBootId: 'boot-a' });
  });

  it('treats a node Ready for minutes after days of existence as recently recovered, and a brand-new node as not', () => {
    const now = Date.parse('2025-03-14T06:20:00Z');
    expect(recentlyRecovered({ name: 'a', ready: 'True', readySince: now - 60_000, createdAt: now - 86_400_000, raw: {} }, now, 30 * 60_000)).toBe(true);
    expect(recentlyRecovered({ name: 'b', ready: 'True', readySince: now - 60_000, createdAt: now - 120_000, raw: {} }, now, 30 * 60_000)).toBe(false);
    expect(recentlyRecovered({ name: 'c', ready: 'True', readySince: now - 3_600_000, createdAt: now - 86_400_000, raw: {} }, now, 30 * 60_000)).toBe(false);
    expect(recentlyRecovered({ name: 'd', ready: 'False', readySince: now - 60_000, createdAt: now - 86_400_000, raw: {} }, now, 30 * 60_000)).toBe(false);
  });

  it('gives the same job key as the kubelet Rebooted event of the same boot', async () => {
    const fromWatch = nodeRecoveredSignal(observeNode(worker1)!, 'k8s-watch', 'Node worker-1 Ready Unknown -> True (watch)');
    const rebooted = KubeEventPayload.parse(JSON.parse(readFileSync(new URL('../../../fixtures/events/node-rebooted.exporter.json', import.meta.url), 'utf8')));
    const fromEvent = classifyEvent(rebooted, 'k8s-event', DEFAULT_EVENT_TRUST).signals!;
    const lookups = new InMemoryLookups();
    const a = await triage([fromWatch], { lookups });
    const b = await triage(fromEvent, { lookups });
    expect(a.jobs[0]!.key).toBe(b.jobs[0]!.key);
    expect(a.jobs[0]!.key).toBe(idempotencyKey('residual', ['worker-1', 'boot', 'worker-1', 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26']));
  });
});
