import { describe, expect, it } from 'vitest';
import { createDryRunHost } from '../../../../../workers/host/dry-run-host.ts';
import { type BlocklistUndo, redisBlocklistUndo } from '../../../../../workers/runbooks/rbd-stale-mapping/blocklist-undo.ts';
import { createStepExecutor } from '../../../../../workers/runbooks/rbd-stale-mapping/execute-step.ts';
import type { StaleMappingStep } from '../../../../../workers/runbooks/rbd-stale-mapping/step.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';

// rbd-stale-mapping records each `ceph osd blocklist add` it really ran for a node's address, so
// out-of-service-taint-release lifts only entries volume-medic added (docs/decisions/0008 §1.6);
// a simulated fence (dry-run, a parked job's plan view) records nothing.

const step = (node: string | null): StaleMappingStep => ({
  kind: 'blocklist-add',
  id: 'blocklist-add:10.0.0.2:0/3710147553',
  description: 'fence',
  destructive: true,
  address: '10.0.0.2:0/3710147553',
  expirySeconds: 3600,
  pool: 'kube',
  headerObject: 'rbd_header.1',
  node,
  undo: ['ceph', 'osd', 'blocklist', 'rm', '10.0.0.2:0/3710147553'],
});

/** A Redis hash in memory, enough for the store. */
function memoryHash() {
  const m = new Map<string, string>();
  return { hget: async (k: string, f: string) => m.get(`${k}|${f}`) ?? null, hset: async (k: string, f: string, v: string) => m.set(`${k}|${f}`, v), m };
}

const at = new Date('2026-12-07T08:05:00Z');

describe('the blocklist undo record', () => {
  it('is written when the fence of a node address really ran, keyed by the node, with the exact address', async () => {
    const undo = redisBlocklistUndo(memoryHash(), 'vm');
    const host = new FakeHost().on(['ceph', 'osd', 'blocklist', 'add'], { exitCode: 0 });
    await createStepExecutor({ enqueue: async () => ({ queue: 'q', deduplicated: false }) }, 'enforce', {
      undo,
      jobKey: 'rbd_kube_img_0123',
      now: () => at,
    }).apply(step('worker-2'), host, undefined as never);
    expect(await undo.forNode('worker-2', at)).toEqual([
      { address: '10.0.0.2:0/3710147553', node: 'worker-2', job: 'rbd_kube_img_0123', addedAt: at.toISOString(), expirySeconds: 3600 },
    ]);
    // Expired entries are gone from Ceph by themselves: not ours to lift any more.
    expect(await undo.forNode('worker-2', new Date(at.getTime() + 3601_000))).toEqual([]);
  });

  it('is not written for a simulated fence, nor for an address no node has', async () => {
    const recorded: Parameters<BlocklistUndo['add']>[0][] = [];
    const undo: BlocklistUndo = { add: async (r) => void recorded.push(r), forNode: async () => [] };
    const exec = createStepExecutor({ enqueue: async () => ({ queue: 'q', deduplicated: false }) }, 'enforce', { undo, jobKey: 'j', now: () => at });
    await exec.apply(step('worker-2'), createDryRunHost(new FakeHost()), undefined as never);
    await exec.apply(step(null), new FakeHost().on(['ceph', 'osd', 'blocklist', 'add'], { exitCode: 0 }), undefined as never);
    expect(recorded).toEqual([]);
  });

  it('refuses to read a record that does not parse', async () => {
    const redis = memoryHash();
    redis.m.set('vm:vm:blocklist-undo|worker-2', JSON.stringify([{ address: 1 }]));
    await expect(redisBlocklistUndo(redis, 'vm').forNode('worker-2', at)).rejects.toThrow();
  });
});
