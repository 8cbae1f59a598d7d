import { describe, expect, it } from 'vitest';
import { isBusy, isNotMapped } from '../../../../../workers/runbooks/rbd-unmap/unmap-error.ts';
import { parseMountinfo } from '../../../../../workers/host/mountinfo.ts';
import { parseShowmappedJson, parseShowmappedText } from '../../../../../workers/runbooks/rbd-unmap/showmapped.ts';
import { podUidOfCgroup } from '../../../../../workers/host/proc-facts.ts';
import { parseListWatchers, parseRbdStatusJson } from '../../../../../workers/runbooks/rbd-stale-mapping/watchers.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import { sysfsMappings } from '../../../../../workers/runbooks/rbd-unmap/sysfs-mappings.ts';
import { cephFixture } from '../rbd-stale-mapping/ceph-fixture.ts';

// krbd/: captured on a real kernel RBD client (test/lab/rbd-unmap.lab.test.ts; index.json there
// has the commands, exit codes and versions).

describe('rbd showmapped', () => {
  it('reads the real JSON and text table (empty namespace column) of a node with two mapped images alike', () => {
    const json = parseShowmappedJson(cephFixture('krbd/rbd-showmapped.json'));
    expect(json).toEqual([
      { id: '0', pool: 'kube', namespace: '', image: 'csi-vol-stale', snap: '-', device: 'rbd0' },
      { id: '1', pool: 'kube', namespace: '', image: 'csi-vol-live', snap: '-', device: 'rbd1' },
    ]);
    expect(parseShowmappedText(cephFixture('krbd/rbd-showmapped.txt'))).toEqual(json);
    expect(parseShowmappedJson(cephFixture('krbd/rbd-device-list.json'))).toEqual(json);
  });

  it('reads a snapshot mapping and a third device in the same format (scenario data of the planner tests)', () => {
    const json = parseShowmappedJson(cephFixture('rbd-showmapped-three.transcribed.json'));
    expect(json[2]).toEqual({ id: '2', pool: 'kube', namespace: '', image: 'csi-vol-0001', snap: 'snap1', device: 'rbd2' });
    expect(parseShowmappedText(cephFixture('rbd-showmapped-three.transcribed.txt'))).toEqual(json);
  });

  it('reads the real output of a node with nothing mapped', () => {
    expect(parseShowmappedJson(cephFixture('rbd-showmapped-none.json'))).toEqual([]);
    expect(parseShowmappedText(cephFixture('rbd-showmapped-none.txt'))).toEqual([]);
  });

  it('refuses a device that is not an rbd device name', () => {
    expect(() => parseShowmappedJson('[{"id":"0","pool":"p","namespace":"","name":"i","snap":"-","device":"/dev/../sda"}]')).toThrow(/not an rbd device/);
  });
});

describe("the kernel's own record, for nodes without an rbd CLI", () => {
  it('reads the captured /sys/bus/rbd/devices as rbd showmapped printed it on the same node', async () => {
    const host = new FakeHost();
    for (const line of cephFixture('krbd/sys-bus-rbd-devices.txt').trim().split('\n')) {
      const i = line.indexOf(':');
      host.put(line.slice(0, i), `${line.slice(i + 1)}\n`);
    }
    expect(await sysfsMappings(host)).toEqual(parseShowmappedJson(cephFixture('krbd/rbd-showmapped.json')));
  });
});

describe('rbd unmap errors', () => {
  it('tells busy (a mounted device, by path or by spec) from not mapped, on real stderr', () => {
    for (const busy of ['krbd/rbd-unmap-busy.err', 'krbd/rbd-unmap-busy-by-spec.err']) {
      expect(isBusy(cephFixture(busy))).toBe(true);
      expect(isNotMapped(cephFixture(busy))).toBe(false);
    }
    for (const gone of ['krbd/rbd-unmap-not-mapped.err', 'rbd-unmap-not-a-block-device.err']) {
      expect(isNotMapped(cephFixture(gone))).toBe(true);
      expect(isBusy(cephFixture(gone))).toBe(false);
    }
  });
});

describe('the kernel client and its watch', () => {
  it('the client address in sysfs is the watcher address Ceph lists, 64-bit cookie kept exact', () => {
    const sysfs = cephFixture('krbd/sys-bus-rbd-devices.txt');
    const addr = /\/sys\/bus\/rbd\/devices\/0\/client_addr:(.*)/.exec(sysfs)?.[1];
    const listed = parseListWatchers(cephFixture('krbd/rados-listwatchers-krbd.txt')).watchers;
    const status = parseRbdStatusJson(cephFixture('krbd/rbd-status-krbd.json')).watchers;
    expect(listed.map((w) => w.address)).toEqual([addr]);
    expect(status).toEqual(listed);
    expect(status[0]?.cookie).toBe('18446462598732840961');
  });
});

describe('mountinfo and cgroups', () => {
  it("finds a staged ceph-csi volume and its bind mount in a real host mountinfo, and a container's own mount in its namespace", () => {
    const host = parseMountinfo(cephFixture('krbd/proc-1-mountinfo.txt'));
    const rbd0 = host.filter((m) => m.source === '/dev/rbd0');
    expect(rbd0.map((m) => [m.majorMinor, m.fsType, m.root])).toEqual([
      ['252:0', 'ext4', '/'],
      ['252:0', 'ext4', '/'],
    ]);
    expect(rbd0[0]?.mountPoint).toMatch(/^\/var\/lib\/kubelet\/plugins\/kubernetes\.io\/csi\/rbd\.csi\.ceph\.com\/.*\/globalmount\//);
    expect(rbd0[1]?.mountPoint).toMatch(/^\/var\/lib\/kubelet\/pods\/6f1c3d2e-.*\/volumes\/kubernetes\.io~csi\/pvc-stale\/mount$/);
    const ctr = parseMountinfo(cephFixture('krbd/proc-unshared-mountinfo.txt')).filter((m) => m.majorMinor === '252:16');
    expect(ctr.map((m) => m.mountPoint)).toContain('/mnt/ctr');
    expect(host.some((m) => m.mountPoint === '/mnt/ctr')).toBe(false);
  });

  it('finds the kubelet mounts of rbd1 with their device numbers', () => {
    const rbd1 = parseMountinfo(cephFixture('mountinfo-host-stale-csi.transcribed.txt')).filter((m) => m.source === '/dev/rbd1');
    expect(rbd1.map((m) => [m.majorMinor, m.fsType])).toEqual([
      ['252:16', 'ext4'],
      ['252:16', 'ext4'],
    ]);
    expect(rbd1[1]?.mountPoint).toMatch(/^\/var\/lib\/kubelet\/pods\/6f1c3a52-.*\/mount$/);
  });

  it('decodes octal escapes in paths', () => {
    const [m] = parseMountinfo('40 22 252:16 / /mnt/with\\040space rw - ext4 /dev/rbd1 rw');
    expect(m?.mountPoint).toBe('/mnt/with space');
  });

  it('reads the pod uid from systemd and cgroupfs cgroups, and none from a host service', () => {
    expect(podUidOfCgroup(cephFixture('cgroup-pod-systemd.transcribed.txt'))).toBe('6f1c3a52-9d7e-4b1a-8c2f-0e4d5b6a7c81');
    expect(podUidOfCgroup(cephFixture('cgroup-pod-cgroupfs.transcribed.txt'))).toBe('6f1c3a52-9d7e-4b1a-8c2f-0e4d5b6a7c81');
    expect(podUidOfCgroup('0::/system.slice/backup.service\n')).toBeNull();
  });
});
