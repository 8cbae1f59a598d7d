import { posix } from 'node:path';
import type { ResidualMultipathJob } from '../../../src/catalogue/jobs.ts';
import { DEVICE_PATTERNS } from '../../../src/catalogue/names.ts';
import { TransientError } from '../../engine/errors.ts';
import type { Host } from '../../host/host.ts';
import { describeFailure } from '../../host/command-failed.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { sysBlockPath } from '../../host/paths.ts';
import type { AttachedVolumes } from './attached-volumes.ts';
import { parseDmsetupInfoColumns, type DmInfo } from './dmsetup-info.ts';
import type { AttachmentFacts, MapFacts, PathFacts, ResidualFacts } from './facts.ts';
import { mountUses } from './mountinfo.ts';
import { isDeadPath, parseMultipathLl, pathsOf, type MultipathMap } from './multipath-ll.ts';
import { parseMultipathdMapsJson, type JsonMapView } from './multipathd-maps-json.ts';
import type { ResidualPolicy } from './policy.ts';
import { probeMaps } from './probe.ts';
import { findOpeners, parseSwaps, scanMountNamespaces } from './proc-scan.ts';
import { normalizeWwid, wwidOfDmUuid, wwidOfSysfs } from './wwid.ts';

// Looks at everything DESIGN class 1 asks for, through the Host port, each command with a
// deadline. Order matters once: the read probes run before the opener scan, so a probe that is
// itself stuck on queued I/O shows up as what it is (a D-state opener), not as a surprise.

export interface ObserveDeps {
  attached: AttachedVolumes;
  policy: ResidualPolicy;
  ranOn: string;
  now: () => Date;
  /**
   * Dry-run changes nothing, and that includes not leaving a probe stuck in D state on a map that
   * queues I/O (queue_if_no_path): such maps are not probed in dry-run (see plan.ts).
   */
  dryRun: boolean;
}

export const LIST_MAPS = ['multipath', '-ll'] as const;
export const SHOW_MAPS_JSON = ['multipathd', 'show', 'maps', 'json'] as const;
export const DM_INFO = ['dmsetup', 'info', '-c'] as const;

const BY_ID = '/dev/disk/by-id';

async function readTrimmed(host: Host, path: string): Promise<string | null> {
  const text = await host.readFile(path).catch(() => null);
  return text === null ? null : text.trim();
}

/** dm-N -> sysfs uuid, for every device-mapper device. */
async function dmUuids(host: Host): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of await host.list('/sys/block')) {
    if (!DEVICE_PATTERNS.dm.test(name)) continue;
    const uuid = await readTrimmed(host, sysBlockPath(name, 'dm', 'uuid'));
    if (uuid !== null) out.set(name, uuid);
  }
  return out;
}

async function attachmentsOf(attached: AttachedVolumes, node: string): Promise<AttachmentFacts> {
  let answer: Set<string> | 'unknown';
  try {
    answer = await attached.wwidsAttachedTo(node);
  } catch (err) {
    throw new TransientError(`cannot read the VolumeAttachments of node ${node}: ${(err as Error).message}`);
  }
  if (answer === 'unknown') return { known: false, why: 'the volumes attached to this node cannot be resolved to WWIDs (no cluster lookups, or an unresolvable volume)' };
  return { known: true, wwids: [...answer].map(normalizeWwid).sort() };
}

async function pathFacts(host: Host, p: ReturnType<typeof pathsOf>[number]): Promise<PathFacts> {
  if (!p.dev || !DEVICE_PATTERNS.scsi.test(p.dev)) return { ...p, sysfsState: null, sysfsWwid: null };
  const state = await readTrimmed(host, sysBlockPath(p.dev, 'device', 'state'));
  const wwid = await readTrimmed(host, sysBlockPath(p.dev, 'device', 'wwid'));
  return { ...p, sysfsState: state, sysfsWwid: wwid === null ? null : wwidOfSysfs(wwid) };
}

/** Where multipathd's own view contradicts `multipath -ll` about a map's paths. */
function disagreement(ll: MultipathMap, json: JsonMapView | undefined): string | null {
  if (!json) return null;
  const key = (ps: Array<{ dev: string | null; dmState: string; checkerState: string }>): string =>
    ps.map((p) => `${p.dev ?? '-'}:${isDeadPath({ ...p, hctl: null, devT: null, onlineState: null }) ? 'dead' : 'live'}`).sort().join(',');
  const a = key(pathsOf(ll));
  const b = key(json.paths);
  return a === b ? null : `multipathd shows its paths as ${b}, multipath -ll as ${a}`;
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

export async function observe(job: ResidualMultipathJob, host: Host, deps: ObserveDeps): Promise<ResidualFacts> {
  const { policy } = deps;
  const t = { timeoutMs: policy.commandTimeoutMs };
  const node = job.target.node;
  const attachments = await attachmentsOf(deps.attached, node);
  const uuids = await dmUuids(host);
  const base = { node, ranOn: deps.ranOn, mode: deps.dryRun ? 'dry-run' as const : 'enforce' as const, observedAt: deps.now().toISOString(), attachments, mountNamespaces: 0, unreadableMountinfo: [] };

  const ll = await host.run(LIST_MAPS, t);
  if (wasSimulated(ll) || ll.exitCode !== 0 || ll.timedOut) {
    const why = wasSimulated(ll) ? 'multipath -ll was not run' : describeFailure(ll);
    const mpathDms = [...uuids].filter(([, u]) => wwidOfDmUuid(u) !== null).map(([dm]) => dm);
    return { ...base, listing: { ok: false, why: `${why}${mpathDms.length ? `; sysfs shows multipath maps ${mpathDms.join(', ')}` : '; sysfs shows no multipath map'}` }, maps: [], multipathdAgrees: null };
  }
  const listing = parseMultipathLl(ll.stdout);

  const jsonRun = await host.run(SHOW_MAPS_JSON, t);
  const json = jsonRun.exitCode === 0 ? parseMultipathdMapsJson(jsonRun.stdout) : null;

  const maps: MapFacts[] = [];
  let agrees: boolean | null = json ? true : null;
  for (const m of listing.maps) {
    const wwid = m.wwid;
    const problems = [...m.problems];
    const bySysfs = [...uuids].find(([, u]) => wwidOfDmUuid(u) === normalizeWwid(wwid))?.[0] ?? null;
    const dm = m.dm ?? bySysfs;
    if (dm && bySysfs !== dm) problems.push(`sysfs does not show ${dm} as the map of WWID ${wwid} (${bySysfs ?? 'no dm device has uuid mpath-' + wwid})`);
    const dmOk = dm !== null && DEVICE_PATTERNS.dm.test(dm);
    const jsonView = json?.find((j) => normalizeWwid(j.wwid) === normalizeWwid(wwid));
    const disagree = disagreement(m, jsonView);
    if (disagree) {
      problems.push(disagree);
      agrees = false;
    }
    const paths = await Promise.all(pathsOf(m).map((p) => pathFacts(host, p)));
    maps.push({
      name: m.name,
      wwid,
      dm,
      majorMinor: dmOk ? await readTrimmed(host, sysBlockPath(dm, 'dev')) : null,
      dmUuid: dm ? (uuids.get(dm) ?? null) : null,
      vendorProduct: m.vendorProduct,
      features: m.features,
      queueIfNoPath: m.queueIfNoPath,
      paths,
      problems,
      slaves: dmOk ? await host.list(sysBlockPath(dm, 'slaves')) : [],
      holders: dmOk ? await host.list(sysBlockPath(dm, 'holders')) : [],
      openCount: null,
      mounts: [],
      swap: false,
      openers: [],
      probe: { outcome: 'not-run', durationMs: 0, exitCode: null, stuckPids: [], detail: 'not probed: the map has a path that is not dead' },
      byIdLinks: [],
    });
  }

  // Mounts of the map or its disks in every mount namespace; swap.
  const scan = await scanMountNamespaces(host);
  const swaps = parseSwaps((await host.readFile('/proc/swaps').catch(() => null)) ?? '');
  for (const m of maps) {
    const targets = [
      { majorMinor: m.majorMinor ?? '', names: m.dm ? [m.dm, `mapper/${m.name}`] : [] },
      ...m.paths.map((p) => ({ majorMinor: p.devT ?? '', names: p.dev ? [p.dev] : [] })),
    ];
    for (const ns of scan.namespaces) {
      for (const entry of ns.mounts) {
        if (!targets.some((t) => mountUses(entry, t))) continue;
        m.mounts.push({ mountPoint: entry.mountPoint, how: `${entry.fsType} ${entry.source} (${ns.namespace})`, pids: ns.pids.slice(0, 5) });
      }
    }
    m.swap = swaps.some((s) => s === `/dev/${m.dm}` || s === `/dev/mapper/${m.name}`);
  }

  // Probe only maps with every path dead: a live map answers anyway, and a probe is not free.
  const dead = maps.filter((m) => m.dm !== null && DEVICE_PATTERNS.dm.test(m.dm) && m.paths.every(isDeadPath));
  const skipped = deps.dryRun ? dead.filter((m) => m.queueIfNoPath) : [];
  for (const m of skipped) {
    m.probe = { outcome: 'skipped-dry-run', durationMs: 0, exitCode: null, stuckPids: [], detail: 'dry-run: the map queues I/O (queue_if_no_path), so a read probe would hang in D state; enforce probes it first' };
  }
  const toProbe = dead.filter((m) => !skipped.includes(m)).map((m) => m.dm as string);
  const probes = await probeMaps(host, toProbe, policy.probeTimeoutMs);
  for (const m of maps) {
    const p = m.dm ? probes.get(m.dm) : undefined;
    if (p) m.probe = p;
  }

  // Open counts after the probes: a probe stuck on the map is one of its openers from now on.
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

  const nodePaths = new Map<string, MapFacts>();
  for (const m of maps) {
    if (!m.dm) continue;
    nodePaths.set(`/dev/${m.dm}`, m);
    nodePaths.set(`/dev/mapper/${m.name}`, m);
  }
  const openers = await findOpeners(host, new Set(nodePaths.keys()));
  for (const [path, list] of openers) {
    const m = nodePaths.get(path);
    if (!m) continue;
    for (const o of list) {
      const same = m.openers.find((x) => x.pid === o.pid);
      if (same) same.fds += o.fds;
      else m.openers.push({ ...o });
    }
  }

  const links = maps.length > 0 ? await readByIdLinks(host) : [];
  for (const m of maps) {
    const devices = new Set([m.dm, ...m.paths.map((p) => p.dev)].filter((d): d is string => d !== null));
    m.byIdLinks = byIdLinks(links, normalizeWwid(m.wwid), devices);
  }

  return {
    ...base,
    listing: listing.stray.length ? { ok: false, why: `multipath -ll printed lines outside any map: ${listing.stray.slice(0, 3).join(' | ')}` } : { ok: true },
    maps,
    mountNamespaces: scan.namespaces.length,
    unreadableMountinfo: scan.unreadable,
    multipathdAgrees: agrees,
  };
}
