import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { RbdUnmapJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { Mode } from '../../../../../src/core/catalogue/result.ts';
import type { PodInfo } from '../../../../../src/adapters/kube/lookups.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import type { FakeHost } from '../../../../testkit/fake-host.ts';
import { createRbdUnmap } from '../../../../../workers/runbooks/rbd-unmap/handler.ts';
import { InMemoryNodePods } from '../../../../../workers/runbooks/rbd-unmap/node-pods.ts';
import type { UnmapPolicy } from '../../../../../workers/runbooks/rbd-unmap/policy.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { fakeNode, GLOBAL_MOUNT, POD_MOUNT, STALE_POD } from './fake-node.ts';

// The node half end to end on a simulated node (recorded outputs, see fake-node.ts).

const job: RbdUnmapJob = {
  version: 1,
  runbook: 'rbd-unmap',
  key: 'rbdunmap_rbd_kube_csi-vol-0001_0123456789ab_10.0.0.2-0-3710147553_abcdef012345',
  target: { node: 'worker-2', pool: 'kube', image: 'csi-vol-0001', watcher: '10.0.0.2:0/3710147553' },
  claim: { namespace: 'shop', name: 'db-data' },
  parent: 'rbd_kube_csi-vol-0001_0123456789ab',
  evidence: [{ source: 'k8s-event', summary: 'FailedMount', raw: {} }],
};

const ctx = (mode: Mode, ranOn = 'worker-2'): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn,
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

const pod = (over: Partial<PodInfo>): PodInfo => ({
  namespace: 'shop',
  name: 'other',
  node: 'worker-2',
  phase: 'Running',
  claims: [],
  waiting: [],
  ...over,
});

function run(host: FakeHost, opts: { pods?: PodInfo[]; policy?: Partial<UnmapPolicy>; mode?: Mode; ranOn?: string; j?: RbdUnmapJob } = {}) {
  const sleeps: number[] = [];
  const handler = createRbdUnmap({
    host,
    stateDir: '/var/lib/volume-medic',
    pods: new InMemoryNodePods(opts.pods ?? []),
    policy: opts.policy ?? {},
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  return { sleeps, result: handler(opts.j ?? job, ctx(opts.mode ?? 'enforce', opts.ranOn)) };
}

const argvs = (host: FakeHost): string[] => host.commands.map((c) => c.join(' '));

describe('rbd-unmap on a simulated node', () => {
  it('unmounts the stale kubelet mounts (pod mount first), unmaps, and verifies the device is gone', async () => {
    const host = fakeNode();
    const { result } = run(host);
    const r = await result;
    expect(r.outcome).toBe('succeeded');
    expect(r.steps.map((s) => [s.id, s.status])).toEqual([
      [`umount:rbd1:${POD_MOUNT}`, 'done'],
      [`umount:rbd1:${GLOBAL_MOUNT}`, 'done'],
      ['unmap:rbd1:kube/csi-vol-0001', 'done'],
    ]);
    const changes = argvs(host).filter((a) => !a.startsWith('rbd showmapped'));
    expect(changes).toEqual([`umount ${POD_MOUNT}`, `umount ${GLOBAL_MOUNT}`, 'rbd unmap /dev/rbd1']);
    expect(r.verification).toMatchObject({ ok: true });
    // The other image's mapping and mount are untouched.
    expect(argvs(host).some((a) => a.includes('rbd0'))).toBe(false);
  });

  it('gives every destructive step its evidence: the mapping, the scan, no pod using the PVC, and why each mount is stale', async () => {
    const r = await run(fakeNode()).result;
    expect(r.outcome).toBe('succeeded');
    const [podMount, globalMount, unmap] = r.steps;
    const claims = (s: typeof unmap): string[] => (s!.evidence ?? []).map((e) => e.claim);
    for (const s of r.steps) {
      expect(s.destructive).toBe(true);
      expect(s.evidence!.every((e) => e.status === 'holds')).toBe(true);
      expect(s.evidence).toContainEqual(
        expect.objectContaining({
          claim: "/dev/rbd1 is the kernel's mapping of kube/csi-vol-0001 (image head, id 1)",
          source: 'rbd showmapped --format json',
          detail: '/dev/rbd/kube/csi-vol-0001 -> rbd1',
        }),
      );
      expect(claims(s)).toContain('no pod that may run on node worker-2 (Pending, Running, Unknown) uses PVC shop/db-data');
      expect(claims(s)).toContain("the holder scan saw the host's mounts and processes");
      expect(claims(s)).toContain('nothing live or foreign holds /dev/rbd1: its mounts and openers belong to pods that no longer run on node worker-2');
    }
    expect(claims(podMount)).toContain(`${POD_MOUNT} is kubelet's mount of /dev/rbd1 for pod ${STALE_POD}, which does not run on node worker-2`);
    expect(claims(globalMount)).toContain(
      `${GLOBAL_MOUNT} is kubelet's global mount of /dev/rbd1, and no pod that may run on node worker-2 mounts it or uses the PVC`,
    );
    expect(claims(unmap).some((c) => c.includes('left over'))).toBe(false);
  });

  it('refuses to touch the device when the job names no PVC: a pod here using it cannot be ruled out', async () => {
    const host = fakeNode();
    const { claim: _claim, ...noClaim } = job;
    const err = (await run(host, { j: noClaim }).result.catch((e: unknown) => e)) as RefusedError;
    expect(err).toBeInstanceOf(RefusedError);
    expect(err.reasons.join(' ')).toContain(
      'not touching /dev/rbd1: no evidence that no pod that may run on node worker-2 uses the PVC of kube/csi-vol-0001 (Pods on node worker-2 (spec.nodeName, status.phase, volumes): the job names no PVC)',
    );
    expect(argvs(host).some((a) => a.startsWith('umount') || a.startsWith('rbd unmap'))).toBe(false);
  });

  it("refuses, even where force is allowed, when the holder scan cannot see the host's processes", async () => {
    const host = fakeNode();
    host.nodes.delete('/proc/1/ns/mnt');
    const err = (await run(host, { policy: { force: 'no-live-workload' } }).result.catch((e: unknown) => e)) as RefusedError;
    expect(err).toBeInstanceOf(RefusedError);
    expect(err.reasons.join(' ')).toContain("no evidence that the holder scan saw the host's mounts and processes");
    expect(argvs(host).some((a) => a.startsWith('umount') || a.startsWith('rbd unmap'))).toBe(false);
  });

  it('refuses when a pod that may run here has no uid, so its mounts cannot be told from stale ones', async () => {
    const host = fakeNode();
    const err = (await run(host, { pods: [pod({ name: 'cache-0' })] }).result.catch((e: unknown) => e)) as RefusedError;
    expect(err.reasons.join(' ')).toContain('no evidence that every pod that may run on node worker-2 is known by uid');
    expect(err.reasons.join(' ')).toContain('no uid: shop/cache-0');
    expect(argvs(host).some((a) => a.startsWith('umount') || a.startsWith('rbd unmap'))).toBe(false);
  });

  it("refuses when the image's udev link names a device not listed as its mapping", async () => {
    const host = fakeNode().put('/dev/rbd/kube/csi-vol-0001', { type: 'symlink', target: '../../rbd0' });
    const err = (await run(host).result.catch((e: unknown) => e)) as RefusedError;
    expect(err.reasons.join(' ')).toContain(
      "contradictory evidence about whether /dev/rbd1 is the kernel's mapping of kube/csi-vol-0001 (image head, id 1) (rbd showmapped --format json: /dev/rbd/kube/csi-vol-0001 -> rbd0)",
    );
    expect(argvs(host).some((a) => a.includes('rbd0') || a.startsWith('umount') || a.startsWith('rbd unmap'))).toBe(false);
  });

  it('retries a busy unmap after a pause, as udev and blkid open the device briefly after the last close', async () => {
    const host = fakeNode({ busyTimes: 1 });
    const { result, sleeps } = run(host);
    expect((await result).outcome).toBe('succeeded');
    expect(argvs(host).filter((a) => a.startsWith('rbd unmap'))).toEqual(['rbd unmap /dev/rbd1', 'rbd unmap /dev/rbd1']);
    expect(sleeps).toEqual([1000]);
  });

  it('refuses a real multi-attach: a pod on this node still uses the PVC', async () => {
    const host = fakeNode();
    const { result } = run(host, { pods: [pod({ name: 'db-0', claims: ['db-data'], uid: STALE_POD })] });
    const err = await result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons[0]).toMatch(/^real multi-attach: pod shop\/db-0 \(Running\) on node worker-2/);
    expect(argvs(host).some((a) => a.startsWith('umount') || a.startsWith('rbd unmap'))).toBe(false);
  });

  it('refuses when the mount belongs to a pod that runs here even if the job names no PVC', async () => {
    const host = fakeNode();
    const { claim: _claim, ...noClaim } = job;
    const { result } = run(host, { j: noClaim, pods: [pod({ uid: STALE_POD })] });
    const err = (await result.catch((e: unknown) => e)) as RefusedError;
    expect(err.reasons.join(' ')).toContain(`live mount ${POD_MOUNT}`);
  });

  it('refuses what a gone pod left behind unless policy allows force, and then forces only after plain unmaps stayed busy', async () => {
    const refused = (await run(fakeNode({ leftoverContainer: true })).result.catch((e: unknown) => e)) as RefusedError;
    expect(refused).toBeInstanceOf(RefusedError);
    expect(refused.reasons.join(' ')).toMatch(
      /leftover mount \/var\/lib\/postgresql\/data in the namespace mnt:\[4026532999\] \(pids 4242; pods 6f1c3a52-.*a forced unmap is not allowed by policy/,
    );

    const host = fakeNode({ leftoverContainer: true, busyUntilForced: true });
    const { result, sleeps } = run(host, { policy: { force: 'no-live-workload' } });
    const done = await result;
    expect(done.outcome).toBe('succeeded');
    // An unmap that may be forced is a high-risk step: with the operator controls on, the engine holds it for approval.
    expect(done.plan).toMatchObject({
      kind: 'steps',
      steps: expect.arrayContaining([expect.objectContaining({ kind: 'unmap', forceAllowed: true, risk: 'high' })]),
    });
    // ...on the evidence that what it gets past is left over from a pod gone from here.
    expect(done.steps.find((s) => s.id === 'unmap:rbd1:kube/csi-vol-0001')!.evidence).toContainEqual(
      expect.objectContaining({
        claim: 'what else holds /dev/rbd1 is left over from pods that no longer run on node worker-2',
        status: 'holds',
        detail: expect.stringContaining('leftover mount /var/lib/postgresql/data'),
      }),
    );
    expect(argvs(host).filter((a) => a.startsWith('rbd unmap'))).toEqual([
      'rbd unmap /dev/rbd1',
      'rbd unmap /dev/rbd1',
      'rbd unmap /dev/rbd1',
      'rbd unmap -o force /dev/rbd1',
    ]);
    expect(sleeps).toEqual([1000, 1000]);
  });

  it('never forces past a process outside any pod that has the device open', async () => {
    const host = fakeNode({ hostOpener: true });
    const err = (await run(host, { policy: { force: 'no-live-workload' } }).result.catch((e: unknown) => e)) as RefusedError;
    expect(err).toBeInstanceOf(RefusedError);
    expect(err.reasons.join(' ')).toContain('foreign process 777 (fd 3, in no pod)');
  });

  it('is done when the image is not mapped on this node', async () => {
    const host = fakeNode();
    const r = await run(host, { j: { ...job, target: { ...job.target, image: 'csi-vol-9999' } } }).result;
    expect(r.outcome).toBe('nothing-to-do');
    expect(r.summary).toContain('not mapped on node worker-2');
  });

  it("refuses a job that reached another node's agent", async () => {
    const err = (await run(fakeNode(), { ranOn: 'worker-9' }).result.catch((e: unknown) => e)) as RefusedError;
    expect(err.reasons).toEqual(['the job is for node worker-2 but ran on worker-9']);
  });

  it('without an rbd CLI on the node, reads the mappings from sysfs and unmaps through /sys/bus/rbd/remove_single_major', async () => {
    const host = fakeNode({ noRbdCli: true, busyTimes: 1 });
    const { result, sleeps } = run(host);
    const r = await result;
    expect(r.outcome).toBe('succeeded');
    expect(r.verification).toMatchObject({ ok: true });
    expect(host.calls.filter((c) => c.op === 'writeSysfs').map((c) => c.args)).toEqual([
      ['/sys/bus/rbd/remove_single_major', '1'],
      ['/sys/bus/rbd/remove_single_major', '1'],
    ]);
    expect(r.steps.at(-1)!.evidence).toContainEqual(
      expect.objectContaining({
        claim: "/dev/rbd1 is the kernel's mapping of kube/csi-vol-0001 (image head, id 1)",
        source: '/sys/bus/rbd/devices/<id>/{pool,pool_ns,name,current_snap}',
        status: 'holds',
      }),
    );
    expect(sleeps).toEqual([1000]);
    expect(host.nodes.has('/sys/bus/rbd/devices/1/name')).toBe(false);
    expect(host.nodes.has('/sys/bus/rbd/devices/0/name')).toBe(true);
  });

  it('without an rbd CLI, forces with "<id> force" only where policy allows it', async () => {
    const host = fakeNode({ noRbdCli: true, leftoverContainer: true, busyUntilForced: true });
    const r = await run(host, { policy: { force: 'no-live-workload' } }).result;
    expect(r.outcome).toBe('succeeded');
    expect(host.calls.filter((c) => c.op === 'writeSysfs').map((c) => c.args[1])).toEqual(['1', '1', '1', '1 force']);
  });

  it('in dry-run looks for real but changes nothing', async () => {
    const host = fakeNode();
    const r = await run(host, { mode: 'dry-run' }).result;
    expect(r.outcome).toBe('planned');
    expect(r.steps.map((s) => s.status)).toEqual(['would-run', 'would-run', 'would-run']);
    expect(argvs(host).every((a) => a.startsWith('rbd showmapped'))).toBe(true);
    expect(r.commands.filter((c) => c.exitCode === null).map((c) => c.argv.join(' '))).toEqual([
      `umount ${POD_MOUNT}`,
      `umount ${GLOBAL_MOUNT}`,
      'rbd unmap /dev/rbd1',
    ]);
  });
});
