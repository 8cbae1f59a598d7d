// The seed's real failure in the guest: an LIO iSCSI target (driven through python3-rtslib-fb;
// targetcli needs D-Bus) on two portals, open-iscsi logged in on both, one dm-multipath map per
// LUN with two paths and queue_if_no_path. Removing a LUN's mapping on the target fails both of
// its paths (`failed faulty running`) under a live map. LUN 0 is never the one removed: LIO puts
// a virtual LUN 0 in its place that keeps answering (LAB-NOTES).
import { listMaps, pathStates, settleUdev, type GuestMap } from './scsi-debug-scenario.ts';
import type { LabVm } from './vm.ts';

const TARGET_IQN = 'iqn.2024-01.io.volume-medic:lab-target';
/** Both portals live on a dummy interface, so one can be dropped to fail a single path. */
const PORTALS = ['192.168.77.1', '192.168.77.2'] as const;

export interface IscsiLun {
  lun: number;
  /** The T10 serial LIO reports; multipath's WWID is derived from it. */
  serial: string;
  map: GuestMap;
}

const TARGET_PY = (luns: number, sizeMb: number) => `
import os
from rtslib_fb import FabricModule, FileIOStorageObject, LUN, NetworkPortal, Target, TPG
os.makedirs('/var/lib/vmlab', exist_ok=True)
target = Target(FabricModule('iscsi'), '${TARGET_IQN}')
tpg = TPG(target, 1)
for k, v in (('authentication', '0'), ('generate_node_acls', '1'), ('cache_dynamic_acls', '1'),
             ('demo_mode_write_protect', '0')):
    tpg.set_attribute(k, v)
for i in range(${luns}):
    so = FileIOStorageObject('vol%d' % i, '/var/lib/vmlab/vol%d.img' % i, size=${sizeMb} * 1024 * 1024)
    LUN(tpg, lun=i, storage_object=so)
    print('lun', i, so.wwn)
for ip in ${JSON.stringify([...PORTALS])}:
    NetworkPortal(tpg, ip, 3260)
tpg.enable = True
`;

/**
 * Starts the target with `luns` LUNs (default 2: LUN 0 stays healthy, LUN 1 is the one to remove),
 * logs in on both portals and waits for one map per LUN with two active paths.
 */
export async function createIscsiLab(vm: LabVm, { luns = 2, sizeMb = 64, timeoutMs = 120_000 } = {}): Promise<IscsiLun[]> {
  await vm.runOk(`set -e
    ip link set lo up
    modprobe -a dummy iscsi_target_mod target_core_file iscsi_tcp
    ip link add vmlab0 type dummy 2>/dev/null || true
    ip link set vmlab0 up
    ${PORTALS.map((ip) => `ip addr replace ${ip}/24 dev vmlab0`).join('\n')}`);
  const created = await vm.runOk(['python3', '-'], { stdin: TARGET_PY(luns, sizeMb), timeoutMs: 60_000 });
  const serials = new Map<number, string>();
  for (const m of created.stdout.matchAll(/^lun (\d+) (\S+)$/gm)) serials.set(Number(m[1]), m[2]!);
  await vm.runOk(
    `set -e
    mkdir -p /run/lock/iscsi
    pgrep -x iscsid >/dev/null || iscsid
    iscsiadm -m discovery -t sendtargets -p ${PORTALS[0]}
    iscsiadm -m node -L all`,
    { timeoutMs: 60_000 },
  );
  await settleUdev(vm);

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lunPaths = await iscsiLunPaths(vm);
    const maps = await listMaps(vm);
    const states = await pathStates(vm);
    const result: IscsiLun[] = [];
    for (const [lun, serial] of serials) {
      const paths = lunPaths.get(lun) ?? [];
      const map = maps.find((m) => paths.length === 2 && m.paths.join() === [...paths].sort().join());
      if (map?.paths.every((p) => states.get(p)?.dm === 'active' && states.get(p)?.checker === 'ready')) {
        result.push({ lun, serial, map });
      }
    }
    if (result.length === serials.size) return result.sort((a, b) => a.lun - b.lun);
    if (Date.now() > deadline) {
      const ll = await vm.run('multipath -ll; lsscsi; iscsiadm -m session');
      throw new Error(`iSCSI maps not ready after ${timeoutMs} ms:\n${ll.stdout}${ll.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** sdX devices of the iSCSI sessions, by LUN number (from the SCSI address H:C:T:L). */
async function iscsiLunPaths(vm: LabVm): Promise<Map<number, string[]>> {
  const r = await vm.runOk(`for d in /sys/block/sd*; do [ -e "$d" ] || continue
    [ "$(cat $d/device/vendor 2>/dev/null | tr -d ' ')" = LIO-ORG ] || continue
    echo "$(basename $d) $(basename $(readlink -f $d/device))"; done`);
  const byLun = new Map<number, string[]>();
  for (const line of r.stdout.split('\n')) {
    const [dev, hctl] = line.trim().split(/\s+/);
    const lun = Number(hctl?.split(':')[3]);
    if (!dev || Number.isNaN(lun)) continue;
    byLun.set(lun, [...(byLun.get(lun) ?? []), dev]);
  }
  return byLun;
}

/** The storage "unmaps the volume": deletes the LUN from the target's TPG (the backstore stays). */
export async function removeLun(vm: LabVm, lun: number): Promise<void> {
  await vm.runOk(['python3', '-'], {
    stdin: `
from rtslib_fb import FabricModule, Target, TPG, LUN
tpg = TPG(Target(FabricModule('iscsi'), '${TARGET_IQN}', mode='lookup'), 1, mode='lookup')
LUN(tpg, lun=${lun}).delete()
`,
    timeoutMs: 60_000,
  });
}
