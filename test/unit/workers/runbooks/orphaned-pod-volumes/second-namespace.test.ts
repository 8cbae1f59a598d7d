import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { parseMountinfo } from '../../../../../workers/host/mountinfo.ts';
import { NO_KUBE_WRITES } from '../../../../../workers/kube-writes/kube-writes.ts';
import { createStepExecutor } from '../../../../../workers/runbooks/orphaned-pod-volumes/execute-step.ts';
import { mountsOfTree, readMounts } from '../../../../../workers/runbooks/orphaned-pod-volumes/node-reads.ts';
import { InMemoryOrphanKube } from '../../../../../workers/runbooks/orphaned-pod-volumes/orphan-kube.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';

// test/fixtures/mountinfo/second-namespace/, captured on the lab's real kernel
// (test/lab/orphaned-pod-volumes.lab.test.ts, LAB_WRITE_FIXTURES=1): a CSI volume's mount point
// unmounted in the host's namespace but still mounted (and bind-mounted elsewhere) in a second
// namespace held by `sleep`. The scan must see it there, and only there.

const dir = new URL('../../../../fixtures/mountinfo/second-namespace/', import.meta.url);
const read = (f: string): string => readFileSync(new URL(f, dir), 'utf8');
const index = JSON.parse(read('index.json')) as { pod: string; holderPid: number };
const HOST = read('host.mountinfo');
const HOLDER = read('holder.mountinfo');
const MOUNT = `${index.pod}/volumes/kubernetes.io~csi/pvc-1/mount`;
const PODS = index.pod.slice(0, index.pod.lastIndexOf('/'));

function node(): FakeHost {
  const host = new FakeHost();
  host.put('/proc/1/ns/mnt', { type: 'symlink', target: 'mnt:[4026531841]' });
  host.put('/proc/1/mountinfo', HOST);
  host.put('/proc/1/stat', '1 (vm-init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0');
  const pid = index.holderPid;
  host.put(`/proc/${pid}/ns/mnt`, { type: 'symlink', target: 'mnt:[4026532183]' });
  host.put(`/proc/${pid}/mountinfo`, HOLDER);
  host.put(`/proc/${pid}/stat`, `${pid} (sleep) S 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 900 0 0`);
  return host;
}

describe('mountinfo of a volume held only in a second mount namespace (real capture)', () => {
  it('parses every line of both tables', () => {
    for (const text of [HOST, HOLDER]) expect(parseMountinfo(text)).toHaveLength(text.split('\n').filter((l) => l.trim() !== '').length);
  });

  it('shows the volume mounted in the holder namespace only', () => {
    expect(parseMountinfo(HOST).some((m) => m.mountPoint === MOUNT)).toBe(false);
    expect(parseMountinfo(HOLDER).some((m) => m.mountPoint === MOUNT)).toBe(true);
    expect(parseMountinfo(HOLDER).some((m) => m.mountPoint === '/mnt/held')).toBe(true);
  });

  it('the scan finds the mount under the pod directory in the holder namespace, naming the sleep', async () => {
    const host = node();
    const found = await mountsOfTree(host, await readMounts(host, PODS), index.pod);
    expect(found).toEqual([
      expect.objectContaining({ host: false, mountPoint: MOUNT, how: 'at-or-under', pids: [{ pid: index.holderPid, comm: 'sleep', podUid: null }] }),
    ]);
  });

  it('refuses the rmdir of the mount point right before it would run', async () => {
    const host = node();
    host.on(['stat'], { stdout: 'directory\t2049\t4096\n' });
    host.on(['find'], { stdout: '' });
    const steps = createStepExecutor({ kube: new InMemoryOrphanKube() });
    const err = await steps
      .apply(
        {
          kind: 'rmdir',
          id: 'rmdir:x:m',
          description: '',
          destructive: true,
          uid: 'x',
          podDir: index.pod,
          podsDir: PODS,
          rel: 'volumes/kubernetes.io~csi/pvc-1/mount',
          path: MOUNT,
          podsDev: '2049',
        },
        host,
        NO_KUBE_WRITES,
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons[0]).toContain(`pid ${index.holderPid} (sleep)`);
    expect(host.commands.some((c) => c[0] === 'rmdir')).toBe(false);
  });
});
