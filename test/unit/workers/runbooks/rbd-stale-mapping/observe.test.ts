import type { Verification } from '../../../../../workers/engine/runbook.ts';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../../../../src/adapters/kube/lookups.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { ParkedError } from '../../../../../workers/engine/gate.ts';
import { RunbookFailedError } from '../../../../../workers/engine/runbook-failed-error.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import { createRbdStaleMapping } from '../../../../../workers/runbooks/rbd-stale-mapping/handler.ts';
import { InMemoryNodeJobSink } from '../../../../../workers/runbooks/rbd-stale-mapping/node-job-sink.ts';
import { InMemoryRbdLookups } from '../../../../../workers/runbooks/rbd-stale-mapping/rbd-lookups.ts';
import type { StaleMappingFacts } from '../../../../../workers/runbooks/rbd-stale-mapping/facts.ts';
import type { StaleMappingPolicy } from '../../../../../workers/runbooks/rbd-stale-mapping/policy.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { cephFixture } from './ceph-fixture.ts';
import { job } from './facts.fixture.ts';

// The cluster half on a fake host answering with the real captured Ceph output: two watchers,
// 127.0.0.1:0/1701404351 and 127.0.0.1:0/2542345596, rewritten here to two different nodes.

const ctx: RunbookContext = {
  jobId: job.key,
  attempt: 1,
  mode: 'enforce',
  ranOn: 'cluster-worker',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
};

const two = (t: string): string => t.replace('127.0.0.1:0/1701404351', '10.0.0.1:0/1701404351').replace('127.0.0.1:0/2542345596', '10.0.0.2:0/2542345596');

/**
 * `released()`: whether worker-2's watch is gone (the node half unmapped there). A fence is what
 * Ceph does with it: `blocklist add` lists the address (in the captured shape) and its watch
 * leaves the header object.
 */
function ceph(released: () => boolean = () => false): FakeHost {
  const fenced = new Set<string>();
  const listing = (): string => {
    const gone = [...fenced, ...(released() ? ['10.0.0.2:'] : [])];
    return two(cephFixture('rados-listwatchers-two.txt'))
      .split('\n')
      .filter((l) => !gone.some((a) => l.includes(a)))
      .join('\n');
  };
  return new FakeHost()
    .on(['rbd', 'info'], { stdout: cephFixture('rbd-info.json') })
    .on(['rados'], () => ({ stdout: listing() }))
    .on(['rbd', 'status'], { stdout: two(cephFixture('rbd-status-two.json')) })
    .on(['ceph', 'osd', 'blocklist', 'ls'], () => ({
      stdout:
        fenced.size === 0
          ? cephFixture('ceph-osd-blocklist-ls-none.json')
          : cephFixture('ceph-osd-blocklist-ls-one.json').replace('127.0.0.1:0/1701404351', [...fenced][0]!),
    }))
    .on(['ceph', 'osd', 'blocklist', 'add'], (argv) => {
      fenced.add(argv[4]!);
      return { stderr: cephFixture('ceph-osd-blocklist-add.err').replace('127.0.0.1:0/1701404351', argv[4]!) };
    });
}

/** worker-2 (10.0.0.2, the other watcher's node) as given, or no such node when null. */
function lookups(worker2: Partial<NodeInfo> | null): InMemoryRbdLookups {
  const l = new InMemoryRbdLookups()
    .addNode({ name: 'worker-1', addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], ready: 'True', labels: {} })
    .addPersistentVolume({
      name: 'pvc-0001',
      volumeMode: 'Filesystem',
      rbd: { pool: 'kube', image: 'csi-vol-0001' },
      claim: { namespace: 'shop', name: 'db-data' },
    })
    .addClaim({ namespace: 'shop', name: 'db-data', volumeName: 'pvc-0001', accessModes: ['ReadWriteOnce'] })
    .addPod({
      namespace: 'shop',
      name: 'db-new',
      node: 'worker-1',
      phase: 'Pending',
      claims: ['db-data'],
      waiting: [],
      controller: { kind: 'ReplicaSet', name: 'db-1' },
    })
    .addReplicaSet({ namespace: 'shop', name: 'db-1' }, 'db')
    .addDeployment({ namespace: 'shop', name: 'db', strategy: 'Recreate', claims: ['db-data'] });
  if (worker2) l.addNode({ name: 'worker-2', addresses: [{ type: 'InternalIP', address: '10.0.0.2' }], labels: {}, ...worker2 });
  return l as InMemoryRbdLookups;
}

const NOW = new Date('2026-12-02T15:00:00.000Z');
const ago = (seconds: number): string => new Date(NOW.getTime() - seconds * 1000).toISOString();

/** The cluster half at NOW with fencing on, on the captured Ceph output. */
function fence(worker2: Partial<NodeInfo> | null, policy: Partial<StaleMappingPolicy> = {}) {
  const host = ceph();
  const clock = { t: NOW.getTime() };
  const handler = createRbdStaleMapping({
    host,
    ceph: {},
    lookups: lookups(worker2),
    nodeJobs: new InMemoryNodeJobSink(),
    stateDir: '/state',
    policy: { fencing: 'on', ...policy },
    now: () => new Date(clock.t),
    sleep: async (ms) => void (clock.t += ms),
  });
  return { host, run: () => handler(job, ctx) };
}
const blocklistAdds = (host: FakeHost): string[] => host.commands.filter((c) => c.slice(0, 4).join(' ') === 'ceph osd blocklist add').map((c) => c.join(' '));

describe('rbd-stale-mapping observe + plan on recorded Ceph output', () => {
  it("ignores the requester's own watch and hands the other to its Ready node; no advice for a Recreate Deployment", async () => {
    const sink = new InMemoryNodeJobSink();
    // The node half unmaps there a few polls after the hand-over.
    let polls = 0;
    const host = ceph(() => sink.jobs.length > 0 && ++polls > 3);
    const clock = { t: 0 };
    const r = await createRbdStaleMapping({
      host,
      ceph: {},
      lookups: lookups({ ready: 'True' }),
      nodeJobs: sink,
      stateDir: '/state',
      now: () => new Date(clock.t),
      sleep: async (ms) => void (clock.t += ms),
    })(job, ctx);
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

  it("fails verification (to be retried) when the node's watch is still there after the hand-over window", async () => {
    const sink = new InMemoryNodeJobSink();
    const clock = { t: 0 };
    const err = await createRbdStaleMapping({
      host: ceph(),
      ceph: {},
      lookups: lookups({ ready: 'True' }),
      nodeJobs: sink,
      stateDir: '/state',
      policy: { handoffVerifyMs: 30_000 },
      now: () => new Date(clock.t),
      sleep: async (ms) => void (clock.t += ms),
    })(job, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunbookFailedError);
    expect((err as Error).message).toMatch(
      /10\.0\.0\.2:0\/2542345596 \(node worker-2\) still watches kube\/csi-vol-0001 after 30 s: see unmap job rbdunmap_rbd_kube_csi-vol-0001_/,
    );
    expect(sink.jobs).toHaveLength(1);
    expect(clock.t).toBe(30_000);
  });

  it('never fences nor hands over for an image no PV of the cluster names, even a watcher in a listed network', async () => {
    // The cluster knows a PV of the same pool, but for another image.
    const other = new InMemoryRbdLookups()
      .addNode({ name: 'worker-1', addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], ready: 'True', labels: {} })
      .addPersistentVolume({
        name: 'pvc-0002',
        volumeMode: 'Filesystem',
        rbd: { pool: 'kube', image: 'csi-vol-0002' },
        claim: { namespace: 'shop', name: 'other' },
      }) as InMemoryRbdLookups;
    const host = ceph();
    const sink = new InMemoryNodeJobSink();
    const err = await createRbdStaleMapping({
      host,
      ceph: {},
      lookups: other,
      nodeJobs: sink,
      stateDir: '/state',
      policy: { fencing: 'on', fenceCidrs: ['10.0.0.0/29'] },
      now: () => NOW,
    })(job, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons).toEqual([expect.stringMatching(/^rbd image kube\/csi-vol-0001 belongs to no PersistentVolume of this cluster/)]);
    expect(blocklistAdds(host)).toEqual([]);
    expect(sink.jobs).toEqual([]);
  });

  it('never fences a watcher at an address no node has: no blocklist step, the refusal names the IP and the image', async () => {
    const { host, run } = fence(null);
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    const reasons = (err as RefusedError).reasons;
    expect(reasons[0]).toMatch(/^watcher 10\.0\.0\.2:0\/2542345596 of kube\/csi-vol-0001 is at 10\.0\.0\.2, an address no node lists/);
    expect(JSON.stringify((err as RefusedError).result)).not.toContain('blocklist-add');
    expect(blocklistAdds(host)).toEqual([]);
  });

  it('fences a watcher at an address of no node inside an operator-listed network, on evidence naming that network', async () => {
    const { host, run } = fence(null, { fenceCidrs: ['192.0.2.0/24', '10.0.0.0/29'] });
    const r = await run();
    expect(r.outcome).toBe('succeeded');
    expect(blocklistAdds(host)).toEqual(['ceph osd blocklist add 10.0.0.2:0/2542345596 3600']);
    const [step] = r.steps;
    expect(step).toMatchObject({ id: 'blocklist-add:10.0.0.2:0/2542345596', status: 'done', destructive: true });
    expect(step!.evidence).toContainEqual(
      expect.objectContaining({
        claim: '10.0.0.2 is in 10.0.0.0/29, a network the operator allows fencing in, and no node lists it',
        status: 'holds',
      }),
    );
    expect(step!.evidence).toContainEqual(
      expect.objectContaining({
        claim: '10.0.0.2:0/2542345596 (client.4116) still watches kube/csi-vol-0001',
        source: 'rados -p kube listwatchers rbd_header.1012658802dd and rbd status kube/csi-vol-0001',
      }),
    );
    expect((r.verification as Verification).ok).toBe(true);
  });

  it('fences the watcher of a node NotReady for longer than the grace, by default only with approval', async () => {
    const worker2 = { ready: 'Unknown' as const, readySince: ago(301) };
    const { host, run } = fence(worker2);
    const r = await run();
    expect(r.outcome).toBe('succeeded');
    expect(blocklistAdds(host)).toEqual(['ceph osd blocklist add 10.0.0.2:0/2542345596 3600']);
    expect(r.steps[0]!.evidence!.map((e) => [e.claim, e.status])).toEqual([
      ['10.0.0.2:0/2542345596 (client.4116) still watches kube/csi-vol-0001', 'holds'],
      ['10.0.0.2 is an address of node worker-2, and of no other node', 'holds'],
      ['node worker-2 has not been Ready for 300 s', 'holds'],
      ['no pod on node worker-2 that uses PVC shop/db-data may still run', 'holds'],
      ['10.0.0.2:0/2542345596 is not blocklisted yet', 'holds'],
    ]);
    const approval = await createRbdStaleMapping({
      host: ceph(),
      ceph: {},
      lookups: lookups(worker2),
      nodeJobs: new InMemoryNodeJobSink(),
      stateDir: '/state',
      now: () => NOW,
    })(job, { ...ctx, mode: 'dry-run' });
    expect(approval.plan).toMatchObject({
      kind: 'steps',
      steps: [{ kind: 'blocklist-add', address: '10.0.0.2:0/2542345596', risk: 'high' }],
    });
  });

  it('does not fence a node NotReady for less than the grace: the job waits until the grace has passed', async () => {
    const { host, run } = fence({ ready: 'False', readySince: ago(60) });
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParkedError);
    expect((err as ParkedError).parking).toMatchObject({ reason: 'evidence', until: new Date(NOW.getTime() + 240_000) });
    expect((err as ParkedError).parking.why).toContain('node worker-2 has not been Ready for 300 s: held for 60 s');
    expect(blocklistAdds(host)).toEqual([]);
  });

  it('fences the watcher of a node tainted out-of-service at once, whatever its NotReady age', async () => {
    const { host, run } = fence({
      ready: 'Unknown',
      readySince: ago(5),
      taints: [{ key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: ago(2) }],
    });
    const r = await run();
    expect(r.outcome).toBe('succeeded');
    expect(blocklistAdds(host)).toEqual(['ceph osd blocklist add 10.0.0.2:0/2542345596 3600']);
    expect(r.steps[0]!.evidence).toContainEqual(
      expect.objectContaining({
        claim: 'node worker-2 is declared out of service (taint node.kubernetes.io/out-of-service:NoExecute)',
        source: 'Node worker-2 spec.taints',
        status: 'holds',
      }),
    );
  });

  it('refuses (permanently) when the image does not exist', async () => {
    const host = ceph().on(['rbd', 'info'], { exitCode: 2, stderr: cephFixture('rbd-info-missing-image.err') });
    const err = await createRbdStaleMapping({
      host,
      ceph: {},
      lookups: lookups({ ready: 'True' }),
      nodeJobs: new InMemoryNodeJobSink(),
      stateDir: '/state',
    })(job, ctx).catch((e: unknown) => e);
    expect((err as RefusedError).reasons[0]).toContain('does not exist');
    expect(host.commands).toHaveLength(1);
  });
});
