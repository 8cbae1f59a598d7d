import { describe, expect, it } from 'vitest';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { OutOfServiceWatch, type SightingStore } from '../../../../src/control/watches/out-of-service.ts';
import { triage } from '../../../../src/control/triage/triage.ts';
import type { TaintSighting } from '../../../../src/core/controls/records.ts';

// The Node watch's part in out-of-service-taint-release: the taint's first sight recorded once
// (with the boot the node ran then), a Ready tainted node becomes a job carrying that first
// sight, and the record goes with the taint.

class MemorySightings implements SightingStore {
  readonly records = new Map<string, TaintSighting>();
  calls = 0;
  async firstSight(seen: TaintSighting): Promise<TaintSighting> {
    this.calls++;
    const had = this.records.get(seen.node);
    if (had && had.timeAdded === seen.timeAdded) return had;
    this.records.set(seen.node, seen);
    return seen;
  }
  async drop(node: string): Promise<void> {
    this.calls++;
    this.records.delete(node);
  }
}

const T0 = '2026-12-07T08:00:00Z';
const node = (o: { ready: string; boot: string; tainted?: boolean; timeAdded?: string }) => ({
  metadata: { name: 'worker-2' },
  spec: {
    taints: [
      { key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' },
      ...(o.tainted === false ? [] : [{ key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: o.timeAdded ?? T0 }]),
    ],
  },
  status: { conditions: [{ type: 'Ready', status: o.ready }], nodeInfo: { bootID: o.boot } },
});

describe('the out-of-service part of the Node watch', () => {
  it('records the first sight once, with the boot of that moment, and signals only once the node is Ready while tainted', async () => {
    const store = new MemorySightings();
    let now = Date.parse('2026-12-07T08:00:05Z');
    const watch = new OutOfServiceWatch(store, () => now);
    expect(await watch.observe(node({ ready: 'Unknown', boot: 'boot-old' }))).toBeUndefined();
    expect(store.records.get('worker-2')).toEqual({
      node: 'worker-2',
      timeAdded: '2026-12-07T08:00:00.000Z',
      bootIdAtFirstSight: 'boot-old',
      readyAtFirstSight: 'Unknown',
      firstSeenAt: '2026-12-07T08:00:05.000Z',
    });
    now += 600_000;
    const signal = await watch.observe(node({ ready: 'True', boot: 'boot-new' }));
    expect(signal).toMatchObject({
      kind: 'node-out-of-service-ready',
      node: 'worker-2',
      bootId: 'boot-new',
      taint: { timeAdded: '2026-12-07T08:00:00.000Z', bootIdAtFirstSight: 'boot-old', firstSeenAt: '2026-12-07T08:00:05.000Z' },
      evidence: { source: 'k8s-watch' },
    });
    // The second observation of the same taint asked the store nothing.
    expect(store.calls).toBe(1);

    const { jobs, ignored } = await triage([signal!], { lookups: new InMemoryLookups() });
    expect(ignored).toEqual([]);
    expect(jobs).toEqual([
      expect.objectContaining({
        runbook: 'out-of-service-taint-release',
        target: { node: 'worker-2' },
        taint: { timeAdded: '2026-12-07T08:00:00.000Z', bootIdAtFirstSight: 'boot-old', firstSeenAt: '2026-12-07T08:00:05.000Z' },
      }),
    ]);
  });

  it('drops the record when the taint goes, and a taint added again is a new first sight', async () => {
    const store = new MemorySightings();
    const watch = new OutOfServiceWatch(store, () => Date.parse('2026-12-07T09:00:00Z'));
    await watch.observe(node({ ready: 'False', boot: 'boot-1' }));
    expect(await watch.observe(node({ ready: 'True', boot: 'boot-2', tainted: false }))).toBeUndefined();
    expect(store.records.has('worker-2')).toBe(false);
    await watch.observe(node({ ready: 'True', boot: 'boot-2', timeAdded: '2026-12-07T10:00:00Z' }));
    expect(store.records.get('worker-2')).toMatchObject({ bootIdAtFirstSight: 'boot-2', timeAdded: '2026-12-07T10:00:00.000Z' });
  });

  it('gives one job key per taint and boot, so the repeats of a Node fold', async () => {
    const store = new MemorySightings();
    const watch = new OutOfServiceWatch(store, () => Date.parse('2026-12-07T09:00:00Z'));
    await watch.observe(node({ ready: 'False', boot: 'boot-1' }));
    const a = await watch.observe(node({ ready: 'True', boot: 'boot-2' }));
    const b = await watch.observe(node({ ready: 'True', boot: 'boot-2' }));
    const c = await watch.observe(node({ ready: 'True', boot: 'boot-3' }));
    const keys = (await triage([a!, b!, c!], { lookups: new InMemoryLookups() })).jobs.map((j) => j.key);
    expect(keys).toHaveLength(2);
  });

  it('takes a node-out-of-service-ready signal only from the Node watch', async () => {
    const store = new MemorySightings();
    const watch = new OutOfServiceWatch(store);
    const s = await watch.observe(node({ ready: 'True', boot: 'b' }));
    const posted = { ...s!, evidence: { ...s!.evidence, source: 'alertmanager' as const } };
    const { jobs, ignored } = await triage([posted], { lookups: new InMemoryLookups() });
    expect(jobs).toEqual([]);
    expect(ignored[0]?.reason).toBe('event-reporter-not-trusted');
  });
});
