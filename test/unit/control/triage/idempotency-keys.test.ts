import { describe, expect, it } from 'vitest';
import { JOB_ID } from '../../../../src/core/catalogue/idempotency-keys.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import type { NodeRecoveredSignal } from '../../../../src/core/signals/index.ts';
import { triage } from '../../../../src/control/triage/index.ts';
import { fixtureLookups, fixtureSignals, type FixtureSource } from '../../../support/fixtures.ts';

// Keys come from the incident's identity, never the clock: a repeat of the same incident, however it
// arrives, folds into one job; a different incident gets a different key.

async function jobsOf(source: FixtureSource, fixture: string): Promise<RemediationJob[]> {
  return (await triage(fixtureSignals(source, fixture).signals, { lookups: fixtureLookups() })).jobs;
}
async function keyOf(source: FixtureSource, fixture: string): Promise<string> {
  const jobs = await jobsOf(source, fixture);
  expect(jobs).toHaveLength(1);
  return jobs[0]!.key;
}

describe('idempotency keys', () => {
  it("gives a resolved alert and the HA peer's re-sent copy the same key", async () => {
    expect(await keyOf('alertmanager', 'kube-node-not-ready-resolved-ha-peer')).toBe(await keyOf('alertmanager', 'kube-node-not-ready-resolved'));
  });

  it('gives an alert the same key alone and inside a grouped payload', async () => {
    const grouped = await jobsOf('alertmanager', 'grouped-several-nodes');
    expect(grouped.find((j) => j.target.node === 'worker-1')?.key).toBe(await keyOf('alertmanager', 'kube-node-not-ready-resolved'));
  });

  it('gives a later outage of the same node a new key', async () => {
    expect(await keyOf('alertmanager', 'kube-node-not-ready-resolved-later-outage')).not.toBe(await keyOf('alertmanager', 'kube-node-not-ready-resolved'));
  });

  it('gives different nodes different keys', async () => {
    const keys = (await jobsOf('alertmanager', 'grouped-several-nodes')).map((j) => j.key);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('gives a Rebooted event the same key through the exporter and through events.k8s.io/v1', async () => {
    expect(await keyOf('events', 'node-rebooted.events-v1')).toBe(await keyOf('events', 'node-rebooted.exporter'));
  });

  it('gives a Rebooted event and a node-recovered signal from the Node watch with the same node and boot id the same key', async () => {
    const [fromEvent] = await jobsOf('events', 'node-rebooted.exporter');
    // What the Node watch reports when Ready goes back to True: node + status.nodeInfo.bootID.
    const fromWatch: NodeRecoveredSignal = {
      kind: 'node-recovered',
      version: 1,
      node: 'worker-1',
      bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26',
      identity: ['boot', 'worker-1', 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26'],
      evidence: { source: 'k8s-watch', summary: 'Node worker-1 Ready Unknown -> True', raw: {} },
    };
    const r = await triage([fromWatch], { lookups: fixtureLookups() });
    expect(r.jobs[0]?.key).toBe(fromEvent?.key);
    expect(r.jobs[0]).toMatchObject({ bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26' });
  });

  it("gives a NodeReady event the Rebooted event's key when the cluster knows the node's boot id, and its own key when not", async () => {
    const rebooted = await keyOf('events', 'node-rebooted.exporter');
    const known = fixtureLookups().addNode({ name: 'worker-1', addresses: [], labels: {}, bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26' });
    const ready = (await triage(fixtureSignals('events', 'node-ready.exporter').signals, { lookups: known })).jobs;
    expect(ready.map((j) => j.key)).toEqual([rebooted]);
    expect(await keyOf('events', 'node-ready.exporter')).not.toBe(rebooted);
  });

  describe('one outage of a node is one job: node + the boot it came back with, not the alert name', () => {
    const BOOT = 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26';
    const known = (bootId = BOOT) => fixtureLookups().addNode({ name: 'worker-1', addresses: [], labels: {}, ready: 'True', bootId });
    // The watch's signal for the same recovery (src/control/watches/node-ready.ts nodeRecoveredSignal).
    const fromWatch = (bootId = BOOT): NodeRecoveredSignal => ({
      kind: 'node-recovered',
      version: 1,
      node: 'worker-1',
      bootId,
      identity: ['boot', 'worker-1', bootId],
      evidence: { source: 'k8s-watch', summary: 'Node worker-1 Ready Unknown -> True', raw: {} },
    });
    const outage = (): NodeRecoveredSignal[] => [
      ...(fixtureSignals('alertmanager', 'kube-node-not-ready-resolved').signals as NodeRecoveredSignal[]),
      ...(fixtureSignals('alertmanager', 'kube-node-unreachable-resolved').signals as NodeRecoveredSignal[]),
      ...(fixtureSignals('events', 'node-ready.exporter').signals as NodeRecoveredSignal[]),
      ...(fixtureSignals('events', 'node-rebooted.exporter').signals as NodeRecoveredSignal[]),
      fromWatch(),
    ];
    // Every order of the five signals, each triaged alone (as separate webhooks and watch events are).
    const orders = <T>(xs: readonly T[]): T[][] =>
      xs.length <= 1 ? [[...xs]] : xs.flatMap((x, i) => orders([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));

    it('gives KubeNodeNotReady, KubeNodeUnreachable, NodeReady, Rebooted and the watch of one power loss one key, in any order', async () => {
      const signals = outage();
      expect(signals).toHaveLength(5);
      const lookups = known();
      for (const order of orders(signals)) {
        const keys = new Set<string>();
        for (const s of order) for (const j of (await triage([s], { lookups })).jobs) keys.add(j.key);
        expect(keys.size).toBe(1);
      }
      // And all five in one payload: one job carrying every piece of evidence.
      const together = await triage(signals, { lookups });
      expect(together.jobs).toHaveLength(1);
      expect(together.jobs[0]).toMatchObject({ bootId: BOOT });
      expect(together.jobs[0]!.evidence.map((e) => e.source).sort()).toEqual(['alertmanager', 'alertmanager', 'k8s-event', 'k8s-event', 'k8s-watch']);
    });

    it('gives a second, later power loss of the same node (a new boot) a new key', async () => {
      const first = (await triage(outage(), { lookups: known() })).jobs;
      const later = [
        ...fixtureSignals('alertmanager', 'kube-node-not-ready-resolved-later-outage').signals,
        ...fixtureSignals('events', 'node-ready.exporter').signals,
        fromWatch('5b0e6c1f-2a7d-4e39-8c42-91d3f0a6b7e8'),
      ];
      const second = (await triage(later, { lookups: known('5b0e6c1f-2a7d-4e39-8c42-91d3f0a6b7e8') })).jobs;
      expect(first).toHaveLength(1);
      expect(second).toHaveLength(1);
      expect(second[0]!.key).not.toBe(first[0]!.key);
    });

    it("keeps each alert's own key when the node's boot id cannot be known (no cluster access, or the API server failing)", async () => {
      const notReady = await keyOf('alertmanager', 'kube-node-not-ready-resolved');
      const unreachable = await keyOf('alertmanager', 'kube-node-unreachable-resolved');
      expect(unreachable).not.toBe(notReady);
      const failing = Object.assign(known(), { node: () => Promise.reject(new Error('connect ECONNREFUSED')) });
      const r = await triage(fixtureSignals('alertmanager', 'kube-node-not-ready-resolved').signals, { lookups: failing });
      expect(r.jobs.map((j) => j.key)).toEqual([notReady]);
    });
  });

  it('gives an Event the same key when the exporter sends it again with a higher count', async () => {
    expect(await keyOf('events', 'rbd-still-used-ceph-csi-count-bumped.exporter')).toBe(await keyOf('events', 'rbd-still-used-ceph-csi.exporter'));
  });

  it('gives a lost disk the same key whether NPD or kubelet reported it, and whether by condition or Event', async () => {
    const fromKubelet = await keyOf('events', 'local-pv-map-lstat-missing.exporter');
    const fromDockerd = await keyOf('events', 'not-a-device-node-local-pv-dockerd.exporter');
    const fromNpdEvent = await keyOf('npd', 'local-disk-lost.event');
    const fromNpdCondition = (await jobsOf('npd', 'local-disk-lost.conditions')).find(
      (j) => j.runbook === 'local-pv-placeholder' && j.target.pv === 'local-pv-1',
    )?.key;
    expect(new Set([fromKubelet, fromDockerd, fromNpdEvent, fromNpdCondition])).toEqual(new Set([fromKubelet]));
  });

  it('gives releasing a placeholder a different key from placing it', async () => {
    expect(await keyOf('npd', 'local-disk-restored.conditions')).not.toBe(await keyOf('npd', 'local-disk-lost.event'));
  });

  it('folds the same incident reported twice in one payload into one job carrying both pieces of evidence', async () => {
    const a = fixtureSignals('events', 'rbd-still-used-ceph-csi.exporter').signals;
    const b = fixtureSignals('events', 'rbd-still-used-ceph-csi-count-bumped.exporter').signals;
    const r = await triage([...a, ...b], { lookups: fixtureLookups() });
    expect(r.jobs).toHaveLength(1);
    expect(r.jobs[0]?.evidence).toHaveLength(2);
  });

  it('makes every key a valid BullMQ job id (no ":", not an integer)', async () => {
    const all = await Promise.all([
      jobsOf('alertmanager', 'grouped-several-nodes'),
      jobsOf('events', 'batch.array'),
      jobsOf('events', 'node-ready.exporter'),
      jobsOf('events', 'rbd-still-used-in-tree.exporter'),
      jobsOf('npd', 'local-disk-lost.conditions'),
      jobsOf('npd', 'local-disk-restored.conditions'),
    ]);
    for (const job of all.flat()) {
      expect(job.key).toMatch(JOB_ID);
      expect(job.key).not.toContain(':');
    }
  });
});
