// scsi_debug storage scenarios: one multipath map over three SCSI hosts that share a WWID.
// With add_host=2, failing one path failed both (LAB-NOTES): three hosts keep paths independent.
import type { LabVm } from './vm.ts';

export interface GuestMap {
  /** Map name as dmsetup/multipath show it (mpatha, or the WWID without user_friendly_names). */
  name: string;
  /** Kernel name of the map, e.g. dm-0. */
  dm: string;
  /** /sys/block/dm-N/dm/uuid, e.g. mpath-3333... */
  uuid: string;
  /** Path devices, e.g. ['sda', 'sdb', 'sdc'], sorted. */
  paths: string[];
}

/** `multipathd show paths format "%d %t %T %o"` as rows, keyed by device. */
export async function pathStates(vm: LabVm): Promise<Map<string, { dm: string; checker: string; dev: string }>> {
  const r = await vm.runOk(['multipathd', 'show', 'paths', 'format', '%d %t %T %o']);
  const rows = new Map<string, { dm: string; checker: string; dev: string }>();
  for (const line of r.stdout.split('\n').slice(1)) {
    const [d, dm, checker, dev] = line.trim().split(/\s+/);
    if (d && dm && checker && dev) rows.set(d, { dm, checker, dev });
  }
  return rows;
}

const LIST_MAPS = `for d in /sys/block/dm-*; do [ -e "$d" ] || continue
  echo "$(basename $d) $(cat $d/dm/name) $(cat $d/dm/uuid) $(ls $d/slaves | tr '\\n' ,)"; done`;

/** The guest's device-mapper multipath maps, from sysfs. */
export async function listMaps(vm: LabVm): Promise<GuestMap[]> {
  const r = await vm.runOk(LIST_MAPS);
  return r.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f): f is [string, string, string, string] => f.length === 4 && f[2]!.startsWith('mpath-'))
    .map(([dm, name, uuid, slaves]) => ({ dm, name, uuid, paths: slaves.split(',').filter(Boolean).sort() }));
}

/**
 * Waits (up to 60 s) for udev to handle what the kernel just announced. Callers then poll for what
 * they need (maps, paths, links) with their own deadline, so settling only saves polls: under TCG
 * on a loaded machine the queue once took longer than 60 s, and a timeout here is no failure.
 */
export async function settleUdev(vm: LabVm): Promise<void> {
  await vm.run(['udevadm', 'settle', '--timeout=60'], { timeoutMs: 70_000 });
}

/**
 * Loads scsi_debug with `hosts` hosts (default 3) and waits for multipathd to build one map with
 * every path active. Returns that map.
 */
export async function createScsiDebugMap(vm: LabVm, { hosts = 3, sizeMb = 64 } = {}): Promise<GuestMap> {
  await vm.runOk(['modprobe', 'scsi_debug', `dev_size_mb=${sizeMb}`, 'num_tgts=1', `add_host=${hosts}`, 'vpd_use_hostno=0']);
  await settleUdev(vm);
  const sdDisks = async () => (await vm.runOk('grep -l scsi_debug /sys/block/sd*/device/model | cut -d/ -f4')).stdout.split('\n').filter(Boolean).sort();
  let map: GuestMap | undefined;
  const deadline = Date.now() + 90_000;
  for (;;) {
    const disks = await sdDisks();
    map = (await listMaps(vm)).find((m) => m.paths.length === hosts && m.paths.every((p) => disks.includes(p)));
    if (map) {
      const states = await pathStates(vm);
      if (map.paths.every((p) => states.get(p)?.dm === 'active' && states.get(p)?.checker === 'ready')) return map;
    }
    if (Date.now() > deadline) {
      const ll = await vm.run(['multipath', '-ll']);
      throw new Error(`no multipath map with ${hosts} active scsi_debug paths after 90 s; disks ${disks.join(',')}\n${ll.stdout}${ll.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Makes every dead map queue I/O forever (`no_path_retry queue`, as iSCSI/FC CSI set-ups commonly
 * do: a probe of a dead map hangs), loads scsi_debug with `count` targets behind 3 hosts, and waits
 * for multipathd to build `count` maps with 3 active paths each. Returns them sorted by uuid.
 */
export async function createQueueingScsiDebugMaps(vm: LabVm, count: number): Promise<GuestMap[]> {
  await vm.runOk(`printf 'overrides {\\n\\tno_path_retry queue\\n}\\n' >> /etc/multipath.conf && multipathd reconfigure`);
  await vm.runOk(['modprobe', 'scsi_debug', 'dev_size_mb=16', `num_tgts=${count}`, 'add_host=3', 'vpd_use_hostno=0']);
  await settleUdev(vm);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const maps = (await listMaps(vm)).filter((m) => /scsi_debug/.test(m.uuid) && m.paths.length === 3);
    const states = await pathStates(vm);
    if (maps.length === count && maps.every((m) => m.paths.every((p) => states.get(p)?.dm === 'active')))
      return maps.sort((a, b) => a.uuid.localeCompare(b.uuid));
    if (Date.now() > deadline)
      throw new Error(`expected ${count} scsi_debug maps with 3 active paths: ${JSON.stringify(maps)}\n${(await vm.run(['multipath', '-ll'])).stdout}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Sets the SCSI device state of each path to offline and waits until multipathd shows all three
 * columns of it: `failed faulty offline`. Waiting for `failed faulty` alone races: when I/O fails
 * on the path first, the kernel fails it in the map and multipathd marks it faulty from the dm
 * event, while its device column (`%o`) still says `running` until the path checker next reads
 * sysfs (seen in CI: { dm: 'failed', checker: 'faulty', dev: 'running' }).
 */
export async function failPaths(vm: LabVm, paths: readonly string[], { timeoutMs = 60_000 } = {}): Promise<void> {
  await vm.runOk(paths.map((p) => `echo offline > /sys/block/${p}/device/state`).join('\n'));
  await waitUntilPaths(vm, paths, (s) => s.dm === 'failed' && s.checker === 'faulty' && s.dev === 'offline', 'failed faulty offline', timeoutMs);
}

/**
 * Waits until multipathd shows each of `paths` `active ready running`. A live path's checker can
 * time out once under emulation while a sibling goes offline (seen in CI: a live path `failed
 * faulty running` right after its sibling failed); multipathd reinstates it at its next check.
 */
export async function waitUntilActive(vm: LabVm, paths: readonly string[], { timeoutMs = 60_000 } = {}): Promise<void> {
  await waitUntilPaths(vm, paths, (s) => s.dm === 'active' && s.checker === 'ready' && s.dev === 'running', 'active ready running', timeoutMs);
}

/** Brings offline paths back (state running) and waits until multipathd has them active again. */
export async function restorePaths(vm: LabVm, paths: readonly string[], { timeoutMs = 60_000 } = {}): Promise<void> {
  await vm.runOk(paths.map((p) => `echo running > /sys/block/${p}/device/state`).join('\n'));
  await waitUntilPaths(vm, paths, (s) => s.dm === 'active' && s.checker === 'ready', 'active ready', timeoutMs);
}

async function waitUntilPaths(
  vm: LabVm,
  paths: readonly string[],
  ok: (s: { dm: string; checker: string; dev: string }) => boolean,
  what: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await pathStates(vm);
    if (
      paths.every((p) => {
        const s = states.get(p);
        return s !== undefined && ok(s);
      })
    )
      return;
    if (Date.now() > deadline) {
      throw new Error(`paths ${paths.join(',')} not ${what} after ${timeoutMs} ms: ${JSON.stringify([...states])}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
