import type { Host } from '../../host/host.ts';
import type { Mapping } from './showmapped.ts';

// Many nodes have no `rbd` CLI: ceph-csi maps images from its plugin container, which ships its
// own. The kernel's own record is enough: /sys/bus/rbd/devices/<id>/{pool,pool_ns,name,
// current_snap} (what `rbd showmapped` itself reads; see test/fixtures/ceph/krbd/
// sys-bus-rbd-devices.txt), the device is /dev/rbd<id>, and unmapping is writing the id to
// /sys/bus/rbd/remove_single_major (`<id> force` to force), as `rbd unmap` does.

const DEVICES = '/sys/bus/rbd/devices';
const REMOVE_SINGLE_MAJOR = '/sys/bus/rbd/remove_single_major';
const REMOVE = '/sys/bus/rbd/remove';

const attr = async (host: Host, id: string, name: string): Promise<string | null> => (await host.readFile(`${DEVICES}/${id}/${name}`))?.trim() ?? null;

export async function sysfsMappings(host: Host): Promise<Mapping[]> {
  const out: Mapping[] = [];
  for (const id of (await host.list(DEVICES)).filter((d) => /^[0-9]{1,6}$/.test(d)).sort((a, b) => Number(a) - Number(b))) {
    const pool = await attr(host, id, 'pool');
    const image = await attr(host, id, 'name');
    if (pool === null || image === null) continue;
    out.push({
      id,
      pool,
      namespace: (await attr(host, id, 'pool_ns')) ?? '',
      image,
      snap: (await attr(host, id, 'current_snap')) ?? '-',
      device: `rbd${id}`,
    });
  }
  return out;
}

/** The sysfs file `rbd unmap` writes to: remove_single_major when the module offers it. */
export async function removeFile(host: Host): Promise<string> {
  return (await host.lstat(REMOVE_SINGLE_MAJOR)) ? REMOVE_SINGLE_MAJOR : REMOVE;
}
