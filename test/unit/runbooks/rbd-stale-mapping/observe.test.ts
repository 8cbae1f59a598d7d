import type { Verification } from '../../../../workers/engine/runbook.ts';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RefusedError } from '../../../../workers/engine/errors.ts';
import { RunbookFailedError } from '../../../../workers/engine/runbook-failed-error.ts';
import { FakeHost } from '../../../../workers/host/fake-host.ts';
import { createRbdStaleMapping, InMemoryNodeJobSink, InMemoryRbdLookups, type StaleMappingFacts } from '../../../../workers/runbooks/rbd-stale-mapping/index.ts';
import type { RunbookContext } from '../../../../workers/runbooks/registry.ts';
import { cephFixture } from './ceph-fixture.ts';
import { job } from './facts.fixture.ts';

// The cluster half on a fake host answering with the real captured Ceph output: two watchers,
// 127.0.0.1:0/1701404351 and 127.0.0.1:0/2542345596, rewritten here to two different nodes.

const ctx: RunbookContext = { jobId: job.key, attempt: 1, mode: 'enforce', ranOn: 'cluster-worker', log: pino({ level: 'silent' }), signal: new AbortController().signal };

const two = (t: string): string => t.replace('127.0.0.1:0/1701404351', '10.0.0.1:0/1701404351').replace('127.0.0.1:0/2542345596', '10.0.0.2:0/2542345596');

/** `released()`: whether worker-2's watch is gone (the node half unmapped there). */
function ceph(released: () => boolean = () => false): FakeHost {
  return new FakeHost()
    .on(['rbd', 'info'], { stdout: cephFixture('rbd-info.json') })
    .on(['rados'], () => ({ stdout: released() ? two(cephFixture('rados-listwatchers-two.txt')).split('\n').filter((l) => !l.includes('10.0.0.2')).join('\n') : two(cephFixture('rados-listwatchers-two.txt')) }))
    .on(['rbd', 'status'], { stdout: two(cephFixture('rbd-status-two.json')) })
    .on(['ceph', 'osd', 'blocklist', 'ls'], { stdout: cephFixture('ceph-osd-blocklist-ls-none.json') });
}

function lookups(worker2Ready: 'True' | 'False' | null): InMemoryRbdLookups {
  const l = new InMemoryRbdLookups()
    .addNode({ name: 'worker-1', addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], ready: 'True', labels: {} })
    .addPersistentVolume({ name: 'pvc-0001', volumeMode: 'Filesystem', rbd: { pool: 'kube', image: 'csi-vol-0001' }, claim: { namespace: 'shop', name: 'db-data' } })
    .addClaim({ namespace: 'shop', name: 'db-data', volumeName: 'pvc-0001', accessModes: ['ReadWriteOnce'] })
    .addPod({ namespace: 'shop', name: 'db-new', node: 'worker-1', phase: 'Pending', claims: ['db-data'], waiting: [], controller: { kind: 'ReplicaSet', name: 'db-1' } })
    .addReplicaSet({ namespace: 'shop', name: 'db-1' }, 'db')
    .addDeployment({ namespace: 'shop', name: 'db', strategy: 'Recreate', claims: ['db-data'] });
  if (worker2Ready) l.addNode({ name: 'worker-2', addresses: [{ type: 'InternalIP', address: '10.0.0.2' }], ready: worker2Ready, labels: {} });
  return l as InMemoryRbdLookups;
}

describe('rbd-stale-mapping observe + plan on recorded Ceph output', () => {
  it('ignores the requester\'s own watch and hands the other to its Ready node; no advice for a Recreate Deployment', async () => {
    const sink = new InMemoryNodeJobSink();
    // The node half unmaps there a few polls after the hand-over.
    let polls = 0;
    const host = ceph(() => sink.jobs.length > 0 && ++polls > 3);
    const clock = { t: 0 };
    const r = await createRbdStaleMapping({ host, ceph: {}, lookups: lookups('True'), nodeJobs: sink, stateDir: '/state', now: () => new Date(clock.t), sleep: async (ms) => void (clock.t += ms) })(job, ctx);
    expect(r.outcome).toBe('succeeded');
    expect((r.verification as Verification).checks.map((c) => c.what)).toContain('10.0.0.2:0/2542345596 (node worker-2) no longer watches kube/csi-vol-0001');
    expect(clock.t).toBe(3_000);
    const facts = r.facts as StaleMappingFacts;
    expect(facts.watchers.map((w) => [w.address, w.role, w.seenBy])).toEqual([
      ['10.0.0.1:0/1701404351', 'requester', ['listwatchers', 'status']],
      ['10.0.0.2:0/2542345596', 'ready-node', ['listwatchers', 'status']],
    ]);
    expect(facts.advice).toBeNull();
    expect(sink.jobs.map((j) => j.target)).toEqual([{ node: 'worker-2', pool: 'kube', image: 'csi-vol-0001', watcher: '10.0.0.2:0/2542345596' }]);
  });

  it('fails verification (to be retried) when the node\'s watch is still there after the hand-over window', async () => {
    const sink = new InMemoryNodeJobSink();
    const clock = { t: 0 };
    const err = await createRbdStaleMapping({
      host: ceph(), ceph: {}, lookups: lookups('True'), nodeJobs: sink, stateDir: '/state', policy: { handoffVerifyMs: 30_000 },
      now: () => new Date(clock.t), sleep: async (ms) => void (clock.t += ms),
    })(job, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunbookFailedError);
    expect((err as Error).message).toMatch(/10\.0\.0\.2:0\/2542345596 \(node worker-2\) still watches kube\/csi-vol-0001 after 30 s: see unmap job rbdunmap_rbd_kube_csi-vol-0001_/);
    expect(sink.jobs).toHaveLength(1);
    expect(clock.t).toBe(30_000);
  });

  it('treats an address no node has as unknown, and by default plans its fence as a step that needs approval', async () => {
    const r = await createRbdStaleMapping({ host: ceph(), ceph: {}, lookups: lookups(null), nodeJobs: new InMemoryNodeJobSink(), stateDir: '/state' })(job, { ...ctx, mode: 'dry-run' });
    expect(r.outcome).toBe('planned');
    expect(r.plan).toMatchObject({ kind: 'steps', steps: [{ kind: 'blocklist-add', address: '10.0.0.2:0/2542345596', risk: 'high' }] });
    expect(JSON.stringify(r.plan)).toContain('no node has address 10.0.0.2');
  });

  it('refuses (permanently) when the image does not exist', async () => {
    const host = ceph().on(['rbd', 'info'], { exitCode: 2, stderr: cephFixture('rbd-info-missing-image.err') });
    const err = await createRbdStaleMapping({ host, ceph: {}, lookups: lookups('True'), nodeJobs: new InMemoryNodeJobSink(), stateDir: '/state' })(job, ctx).catch((e: unknown) => e);
    expect((err as RefusedError).reasons[0]).toContain('does not exist');
    expect(host.commands).toHaveLength(1);
  });
});
