import { describe, expect, it } from 'vitest';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { NO_KUBE_WRITES } from '../../../../../workers/kube-writes/kube-writes.ts';
import { createStepExecutor } from '../../../../../workers/runbooks/orphaned-pod-volumes/execute-step.ts';
import { InMemoryOrphanKube } from '../../../../../workers/runbooks/orphaned-pod-volumes/orphan-kube.ts';
import type { OrphanStep } from '../../../../../workers/runbooks/orphaned-pod-volumes/step.ts';
import { DEV, NODE, PODS, UID } from './facts.fixture.ts';
import { CSI_VOL, orphanNode, POD_DIR } from './orphan-node.ts';

// The re-checks right before each change (docs/decisions/0008 §1.2, §2.5): what the plan saw is
// read again, the mount tables of every namespace last.

const where = (rel: string) => ({ uid: UID, podDir: POD_DIR, podsDir: PODS, rel, path: `${POD_DIR}/${rel}`, podsDev: DEV, evidence: [] });
const rmdir = (rel: string): OrphanStep => ({ kind: 'rmdir', id: `rmdir:${UID}:${rel}`, description: '', destructive: true, ...where(rel) });
const volData: OrphanStep = {
  kind: 'unlink-vol-data',
  id: `unlink-vol-data:${UID}:pvc-1`,
  description: '',
  destructive: true,
  ...where('volumes/kubernetes.io~csi/pvc-1/vol_data.json'),
  node: NODE,
  volume: 'pvc-1',
  pv: 'pvc-1',
  stagingPaths: ['/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pvc-1/globalmount'],
};
const executor = (attached: string[] = []) => createStepExecutor({ kube: new InMemoryOrphanKube({}, { [NODE]: attached }) });
const refusal = async (p: Promise<unknown>): Promise<string> => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RefusedError);
  return (err as RefusedError).reasons.join('; ');
};

describe('orphaned-pod-volumes steps re-check right before they act', () => {
  it('rmdirs an empty directory on pods/ file system with one path in the argv', async () => {
    const n = orphanNode();
    await executor().apply(rmdir('volumes/kubernetes.io~csi/pvc-1/mount'), n.host, NO_KUBE_WRITES);
    expect(n.changes()).toEqual([`rmdir -- ${CSI_VOL}/mount`]);
    expect(await executor().isDone(rmdir('volumes/kubernetes.io~csi/pvc-1/mount'), n.host, NO_KUBE_WRITES)).toBe(true);
  });

  it('refuses when a mount appeared between plan and step, in another mount namespace, naming the pid (and runs nothing)', async () => {
    const n = orphanNode();
    n.addNamespace(4242, 'sleep', [`${CSI_VOL}/mount`]);
    const why = await refusal(executor().apply(rmdir('volumes/kubernetes.io~csi/pvc-1/mount'), n.host, NO_KUBE_WRITES));
    expect(why).toMatch(/^mounted-in-namespace: .*pvc-1\/mount is a mount point in mount namespace mnt:\[\d+\]: pid 4242 \(sleep\)/);
    expect(n.changes()).toEqual([]);
  });

  it('refuses an rmdir of any directory of the pod while something is mounted anywhere under the pod directory', async () => {
    const n = orphanNode();
    n.hostMount(`${CSI_VOL}/mount`);
    expect(await refusal(executor().apply(rmdir('volumes/kubernetes.io~empty-dir/cache'), n.host, NO_KUBE_WRITES))).toContain(
      "in the host's mount namespace: pid 1 (systemd)",
    );
    expect(n.changes()).toEqual([]);
  });

  it('refuses a directory that is no longer empty (entry-not-ours) or on another file system (crosses-filesystem)', async () => {
    const n = orphanNode();
    n.host.put(`${POD_DIR}/volumes/kubernetes.io~empty-dir/cache/new.log`, 'x');
    expect(await refusal(executor().apply(rmdir('volumes/kubernetes.io~empty-dir/cache'), n.host, NO_KUBE_WRITES))).toMatch(
      /^entry-not-ours: .* is not empty now: new.log/,
    );
    n.devs.set(`${CSI_VOL}/mount`, '64771');
    expect(await refusal(executor().apply(rmdir('volumes/kubernetes.io~csi/pvc-1/mount'), n.host, NO_KUBE_WRITES))).toMatch(/^crosses-filesystem: /);
    expect(n.changes()).toEqual([]);
  });

  it('unlinks vol_data.json after reading it again (this node, not staged, no attachment, no sandbox)', async () => {
    const n = orphanNode();
    await executor().apply(volData, n.host, NO_KUBE_WRITES);
    expect(n.changes()).toEqual([`unlink -- ${CSI_VOL}/vol_data.json`]);
  });

  it.each<[string, (n: ReturnType<typeof orphanNode>) => void, string[]]>([
    ['volume-still-staged', (n) => n.hostMount('/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pvc-1/globalmount'), []],
    ['volume-still-staged', () => undefined, ['pvc-1']],
    ['pod-known-to-runtime', (n) => n.sandboxes.add(UID), []],
    ['vol-data-unreadable', (n) => n.host.put(`${CSI_VOL}/vol_data.json`, '{"nodeName":'), []],
    ['entry-not-ours', (n) => n.host.put(`${CSI_VOL}/vol_data.json`, { type: 'symlink', target: '/etc/passwd' }), []],
  ])('refuses the vol_data.json unlink: %s', async (reason, change, attached) => {
    const n = orphanNode();
    change(n);
    expect(await refusal(executor(attached).apply(volData, n.host, NO_KUBE_WRITES))).toMatch(new RegExp(`^${reason}: `));
    expect(n.changes()).toEqual([]);
  });

  it('refuses a vol_data.json of another node', async () => {
    const n = orphanNode({ node: 'worker-9' });
    expect(await refusal(executor().apply(volData, n.host, NO_KUBE_WRITES))).toMatch(/^vol-data-unreadable: .* names node worker-9/);
  });

  it('fails the step (no fallback to anything recursive) when the kernel says the directory is not empty', async () => {
    const n = orphanNode();
    // A file appears after the re-check: find sees it empty, rmdir(2) does not.
    n.host.on(['find'], () => ({ stdout: '' }));
    await expect(executor().apply(rmdir('volumes/kubernetes.io~empty-dir'), n.host, NO_KUBE_WRITES)).rejects.toThrow(/Directory not empty/);
    expect(n.host.commands.filter((c) => c[0] === 'rm')).toEqual([]);
  });
});
