import { FakeHost } from '../../../../testkit/fake-host.ts';
import { cephFixture } from '../rbd-stale-mapping/ceph-fixture.ts';

// A simulated node with kernel RBD (this host has none): showmapped, mount tables, cgroups and
// `rbd unmap` answers are the recorded outputs in test/fixtures/ceph, and commands change the
// state they would change (umount drops the mount, unmap drops the mapping).

const HOST_NS = 'mnt:[4026531840]';
const CONTAINER_NS = 'mnt:[4026532999]';
export const STALE_POD = '6f1c3a52-9d7e-4b1a-8c2f-0e4d5b6a7c81';
export const POD_MOUNT = `/var/lib/kubelet/pods/${STALE_POD}/volumes/kubernetes.io~csi/pvc-2c0f5d3e-6a1b-4c9d-8e7f-1a2b3c4d5e6f/mount`;
export const GLOBAL_MOUNT =
  '/var/lib/kubelet/plugins/kubernetes.io/csi/rbd.csi.ceph.com/7d9a6e0c2b1f4e3d8c5a9b0e1f2d3c4b5a6978877665544332211ffeeddccbbaa/globalmount/0001-0009-rook-ceph-0000000000000002-4b1de7a2-0c4f-11ef-9a3e-0a580a800012';

export interface FakeNodeOptions {
  /** A container process of the (gone) pod still has the volume mounted in its own namespace. */
  leftoverContainer?: boolean;
  /** A process outside any pod has /dev/rbd1 open. */
  hostOpener?: boolean;
  /** `rbd unmap` answers busy this many times before it succeeds (0: never busy). */
  busyTimes?: number;
  /** `rbd unmap` stays busy until forced. */
  busyUntilForced?: boolean;
  /**
   * No rbd CLI on the node (ceph-csi brings its own in its container): `rbd` is not found
   * through nsenter, and the kernel's sysfs (/sys/bus/rbd, as captured in krbd/) is the way.
   */
  noRbdCli?: boolean;
}

export function fakeNode(opts: FakeNodeOptions = {}): FakeHost {
  let hostMounts = cephFixture('mountinfo-host-stale-csi.transcribed.txt');
  let mapped = JSON.parse(cephFixture('rbd-showmapped-three.transcribed.json')) as Array<{
    id: string;
    pool: string;
    namespace: string;
    name: string;
    snap: string;
    device: string;
  }>;
  let busy = opts.busyTimes ?? 0;
  const host = new FakeHost();
  const putHostMounts = (): void => {
    host.put('/proc/1/mountinfo', hostMounts).put('/proc/1/task/1/mountinfo', hostMounts);
  };
  host
    .put('/proc/1/ns/mnt', { type: 'symlink', target: HOST_NS })
    .put('/proc/1/task/1/ns/mnt', { type: 'symlink', target: HOST_NS })
    .put('/proc/1/cgroup', '0::/init.scope\n')
    .put('/dev/rbd0', { type: 'block', major: 252, minor: 0 })
    .put('/dev/rbd1', { type: 'block', major: 252, minor: 16 })
    .put('/dev/rbd/kube/csi-vol-0001', { type: 'symlink', target: '../../rbd1' })
    .put('/sys/bus/rbd/devices/1/client_addr', '10.0.0.2:0/3710147553\n');
  putHostMounts();
  if (opts.leftoverContainer) {
    host
      .put('/proc/4242/ns/mnt', { type: 'symlink', target: CONTAINER_NS })
      .put('/proc/4242/task/4242/ns/mnt', { type: 'symlink', target: CONTAINER_NS })
      .put('/proc/4242/task/4242/mountinfo', cephFixture('mountinfo-container-rbd1.transcribed.txt'))
      .put('/proc/4242/cgroup', cephFixture('cgroup-pod-systemd.transcribed.txt'));
  }
  if (opts.hostOpener) {
    host
      .put('/proc/777/ns/mnt', { type: 'symlink', target: HOST_NS })
      .put('/proc/777/task/777/ns/mnt', { type: 'symlink', target: HOST_NS })
      .put('/proc/777/task/777/mountinfo', hostMounts)
      .put('/proc/777/cgroup', '0::/system.slice/backup.service\n')
      .put('/proc/777/fd/3', { type: 'symlink', target: '/dev/rbd1' });
  }

  // The kernel's record of the mappings, in the layout of krbd/sys-bus-rbd-devices.txt.
  const putSysfs = (): void => {
    for (const key of [...host.nodes.keys()]) if (key.startsWith('/sys/bus/rbd/devices/') && !key.endsWith('/client_addr')) host.nodes.delete(key);
    for (const m of mapped) {
      const d = `/sys/bus/rbd/devices/${m.id}`;
      host.put(`${d}/pool`, `${m.pool}\n`).put(`${d}/pool_ns`, `${m.namespace}\n`).put(`${d}/name`, `${m.name}\n`).put(`${d}/current_snap`, `${m.snap}\n`);
    }
  };
  putSysfs();
  host.put('/sys/bus/rbd/remove_single_major', '');
  const unmapDevice = (dev: string, forced: boolean): 'done' | 'busy' | 'gone' => {
    if (opts.busyUntilForced && !forced) return 'busy';
    if (busy > 0 && !forced) {
      busy--;
      return 'busy';
    }
    if (!mapped.some((m) => m.device === dev)) return 'gone';
    mapped = mapped.filter((m) => m.device !== dev);
    host.nodes.delete(dev);
    host.nodes.delete('/dev/rbd/kube/csi-vol-0001');
    putSysfs();
    return 'done';
  };

  host.on(['rbd', 'showmapped'], () => ({ stdout: `${JSON.stringify(mapped)}\n` }));
  host.on(['umount'], (argv) => {
    const path = argv[1]!;
    const lines = hostMounts.split('\n');
    if (!lines.some((l) => l.split(' ')[4] === path)) return { exitCode: 32, stderr: `umount: ${path}: not mounted.\n` };
    hostMounts = lines.filter((l) => l.split(' ')[4] !== path).join('\n');
    putHostMounts();
    return {};
  });
  host.on(['rbd', 'unmap'], (argv) => {
    const dev = argv.at(-1)!;
    switch (unmapDevice(dev, argv.includes('force'))) {
      case 'busy':
        return { exitCode: 16, stderr: cephFixture('krbd/rbd-unmap-busy.err') };
      case 'gone':
        return { exitCode: 22, stderr: cephFixture('rbd-unmap-not-a-block-device.err').replace('/dev/rbd0', dev) };
      default:
        return {};
    }
  });
  // Registered last, so it wins over the rbd scripts above.
  if (opts.noRbdCli) {
    host.on(['rbd'], () => ({ exitCode: 127, stderr: 'nsenter: failed to execute rbd: No such file or directory\n' }));
    const write = host.writeSysfs.bind(host);
    host.writeSysfs = async (path, value) => {
      await write(path, value);
      if (path !== '/sys/bus/rbd/remove_single_major') return;
      const [id, force] = value.split(' ');
      const r = unmapDevice(`/dev/rbd${id}`, force === 'force');
      if (r === 'busy') throw Object.assign(new Error(`EBUSY: resource busy or locked, write`), { code: 'EBUSY' });
      if (r === 'gone') throw Object.assign(new Error(`ENOENT: no such device, write`), { code: 'ENOENT' });
    };
  }
  return host;
}
