import { posix } from 'node:path';
import { DEVICE_PATTERNS } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import { findOpeners, parseSwaps, scanMountNamespaces } from '../../host/proc-facts.ts';
import { parseDmsetupInfoColumns, type DmInfo } from './dmsetup-info.ts';
import type { IntentFacts, MapFacts, Opener } from './facts.ts';
import { mountUses } from './mount-uses.ts';
import { readTrimmed } from './observe-maps.ts';
import type { readObservations } from './observations.ts';
import { normalizeWwid } from './wwid.ts';

// observe.ts's interlocks: what sits on a map or its disks and who uses them (loop devices, LIO
// exports, mounts in every namespace, swap, open file descriptors), then its open count and the
// /dev/disk/by-id links that lead to it.

const DM_INFO = ['dmsetup', 'info', '-c'] as const;
const BY_ID = '/dev/disk/by-id';
const LIO_CORE = '/sys/kernel/config/target/core';

const devList = (m: MapFacts): string[] => m.paths.map((p) => p.dev).filter((d): d is string => d !== null && DEVICE_PATTERNS.scsi.test(d));

/** What sits on top of a map without being a holder: loop devices backed by it, LIO backstores exporting it. */
export async function findStacked(host: Host, maps: MapFacts[]): Promise<void> {
  const byDevPath = new Map<string, MapFacts>();
  for (const m of maps) {
    if (!m.dm) continue;
    byDevPath.set(`/dev/${m.dm}`, m);
    byDevPath.set(`/dev/mapper/${m.name}`, m);
  }
  for (const loop of await host.list('/sys/block')) {
    if (!DEVICE_PATTERNS.loop.test(loop)) continue;
    const backing = await readTrimmed(host, `/sys/block/${loop}/loop/backing_file`);
    const m = backing === null ? undefined : byDevPath.get(backing);
    if (m) m.loopBacked.push(loop);
  }
  for (const hba of await host.list(LIO_CORE)) {
    for (const dev of await host.list(`${LIO_CORE}/${hba}`)) {
      const udevPath = await readTrimmed(host, `${LIO_CORE}/${hba}/${dev}/udev_path`);
      const m = udevPath === null ? undefined : byDevPath.get(udevPath);
      if (m) m.exportedBy.push(`${hba}/${dev}`);
    }
  }
}

/** Mounts of each map or its disks (and of orphan disks) in every mount namespace; swap. */
export async function findMounts(host: Host, maps: MapFacts[], intents: IntentFacts[]): Promise<Awaited<ReturnType<typeof scanMountNamespaces>>> {
  const scan = await scanMountNamespaces(host);
  const swaps = parseSwaps((await host.readFile('/proc/swaps').catch(() => null)) ?? '');
  const mountsOf = (targets: Array<{ majorMinor: string; names: string[] }>): MapFacts['mounts'] => {
    const out: MapFacts['mounts'] = [];
    for (const ns of scan.namespaces) {
      for (const entry of ns.mounts) {
        if (targets.some((t) => mountUses(entry, t)))
          out.push({ mountPoint: entry.mountPoint, how: `${entry.fsType} ${entry.source} (${ns.namespace})`, pids: ns.pids.slice(0, 5) });
      }
    }
    return out;
  };
  for (const m of maps) {
    m.mounts = mountsOf([
      { majorMinor: m.majorMinor ?? '', names: m.dm ? [m.dm, `mapper/${m.name}`] : [] },
      ...m.paths.map((p) => ({ majorMinor: p.devT ?? '', names: p.dev ? [p.dev] : [] })),
    ]);
    m.swap = swaps.some((s) => s === `/dev/${m.dm}` || s === `/dev/mapper/${m.name}`);
  }
  for (const i of intents) for (const d of i.orphans) d.mounts = mountsOf([{ majorMinor: d.devT ?? '', names: [d.name] }]);

  return scan;
}

/** Who has a map, one of its disks or an orphan disk open: one pass over /proc; our own stuck probes named as such. */
export async function findMapOpeners(
  host: Host,
  maps: MapFacts[],
  intents: IntentFacts[],
  observations: Awaited<ReturnType<typeof readObservations>>['observations'],
  bootId: string | null,
): Promise<Map<string, Opener[]>> {
  const ours = new Set(observations.stuckProbes.filter((p) => p.bootId === bootId).map((p) => `${p.pid}/${p.startTime ?? '?'}`));
  const isOurProbe = (o: Opener): boolean => ours.has(`${o.pid}/${o.startTime ?? '?'}`);
  const devPaths = new Map<string, { add: (o: Opener) => void }>();
  const adder = (list: Opener[]) => ({
    add(o: Opener): void {
      const same = list.find((x) => x.pid === o.pid);
      if (same) same.fds += o.fds;
      else list.push({ ...o, ownProbe: isOurProbe(o) });
    },
  });
  for (const m of maps) {
    if (m.dm) for (const p of [`/dev/${m.dm}`, `/dev/mapper/${m.name}`]) devPaths.set(p, adder(m.openers));
    for (const d of devList(m)) devPaths.set(`/dev/${d}`, adder(m.diskOpeners));
  }
  for (const i of intents) for (const d of i.orphans) devPaths.set(`/dev/${d.name}`, adder(d.openers));
  const openers = await findOpeners(host, new Set(devPaths.keys()));
  for (const [path, list] of openers) for (const o of list) devPaths.get(path)?.add(o);

  return openers;
}

/** dmsetup's open count of each map. */
export async function findOpenCounts(host: Host, maps: MapFacts[], t: { timeoutMs: number }): Promise<void> {
  const info = await host.run(DM_INFO, t);
  let dmInfo: DmInfo[] | null = null;
  if (info.exitCode === 0) {
    try {
      dmInfo = parseDmsetupInfoColumns(info.stdout);
    } catch {
      dmInfo = null;
    }
  }

  for (const m of maps) m.openCount = dmInfo?.find((r) => r.name === m.name)?.open ?? null;
}

interface ByIdLink {
  link: string;
  lower: string;
  /** Basename of the link's target (`dm-3`, `sdc`), or null. */
  device: string | null;
}

/** /dev/disk/by-id read once per job (a node with many maps has thousands of links). */
async function readByIdLinks(host: Host): Promise<ByIdLink[]> {
  const out: ByIdLink[] = [];
  for (const name of await host.list(BY_ID)) {
    const link = `${BY_ID}/${name}`;
    const target = await host.readlink(link);
    out.push({ link, lower: name.toLowerCase(), device: target === null ? null : posix.basename(target) });
  }
  return out;
}

function byIdLinks(links: readonly ByIdLink[], wwid: string, devices: ReadonlySet<string>): string[] {
  const naa = wwid.startsWith('3') ? wwid.slice(1) : null;
  const out: string[] = [];
  for (const { link, lower, device } of links) {
    const names = lower.includes(wwid) || (naa !== null && lower.includes(`wwn-0x${naa}`));
    if (names || (device !== null && devices.has(device))) out.push(link);
  }
  return out.sort();
}

/** The /dev/disk/by-id links that name each map's WWID or lead to it or its disks. */
export async function findByIdLinks(host: Host, maps: MapFacts[]): Promise<void> {
  const links = maps.length > 0 ? await readByIdLinks(host) : [];
  for (const m of maps) {
    const devices = new Set([m.dm, ...m.paths.map((p) => p.dev)].filter((d): d is string => d !== null));
    m.byIdLinks = byIdLinks(links, normalizeWwid(m.wwid), devices);
  }
}
