import { posix } from 'node:path';
import type { ResidualMultipathJob } from '../../../src/core/catalogue/jobs.ts';
import { DEVICE_PATTERNS, isMapName } from '../../../src/core/catalogue/names.ts';
import { TransientError } from '../../../src/core/errors.ts';
import type { Host } from '../../host/host.ts';
import { describeFailure } from '../../host/command-failed.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { sysBlockPath } from '../../host/paths.ts';
import type { AttachedVolumes } from './attached-volumes.ts';
import { parseDmsetupInfoColumns, type DmInfo } from './dmsetup-info.ts';
import type { AttachmentFacts, IntentFacts, MapFacts, Opener, OrphanDisk, PathFacts, ResidualFacts } from './facts.ts';
import { readIntents } from './intents.ts';
import { cheapEvidence } from './map-evidence.ts';
import { acrossBoot, readObservations, recordSightings, writeObservations } from './observations.ts';
import { mountUses } from './mount-uses.ts';
import { isDeadPath, parseMultipathLl, pathsOf, type MultipathMap } from './multipath-ll.ts';
import { parseMultipathdMapsJson, type JsonMapView } from './multipathd-maps-json.ts';
import type { ResidualPolicy } from './policy.ts';
import { probeMaps } from './probe.ts';
import { findOpeners, parseSwaps, processFacts, scanMountNamespaces } from '../../host/proc-facts.ts';
import { diskIdentity, isSameDisk } from './sysfs-maps.ts';
import { normalizeWwid, wwidOfDmUuid, wwidOfSysfs } from './wwid.ts';

// Looks at everything docs/safety.md asks of this runbook, through the Host port, each command with a
// deadline. Order matters: every cheap interlock (holders, mounts, loop devices and LIO exports
// on top, attachments, openers) is read first, and only maps that pass all of them are probed
// (a probe of a held map could only leave one more process in D state). A probe left stuck is
// then one of its map's openers, known as ours; open counts are read after the probes.

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
  /** Host path of the agent's state directory: observations over time and intent records. */
  stateDir: string;
}

const LIST_MAPS = ['multipath', '-ll'] as const;
const SHOW_MAPS_JSON = ['multipathd', 'show', 'maps', 'json'] as const;
const DM_INFO = ['dmsetup', 'info', '-c'] as const;

const BY_ID = '/dev/disk/by-id';
const LIO_CORE = '/sys/kernel/config/target/core';

const devList = (m: MapFacts): string[] => m.paths.map((p) => p.dev).filter((d): d is string => d !== null && DEVICE_PATTERNS.scsi.test(d));

/** The disks of an intent record still present with the same identity (H:C:T:L and WWID), found by identity, not name. */
async function orphanDisks(host: Host, disks: ReadonlyArray<{ name: string; hctl: string | null; wwid: string }>, wwid: string): Promise<OrphanDisk[]> {
  const out: OrphanDisk[] = [];
  for (const d of disks) {
    if (!DEVICE_PATTERNS.scsi.test(d.name)) continue;
    const now = await diskIdentity(host, d.name);
    if (now === null || !isSameDisk(now, { hctl: d.hctl, wwid })) continue;
    out.push({
      name: d.name,
      hctl: now.hctl,
      wwid: now.wwid,
      holders: await host.list(sysBlockPath(d.name, 'holders')),
      mounts: [],
      openers: [],
      devT: await readTrimmed(host, sysBlockPath(d.name, 'dev')),
    });
  }
  return out;
}

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
  if (answer === 'unknown')
    return {
      known: false,
      why: 'the volumes attached to this node cannot be resolved to WWIDs (no cluster lookups, or an unresolvable volume)',
    };
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
    ps
      .map((p) => `${p.dev ?? '-'}:${isDeadPath({ ...p, hctl: null, devT: null, onlineState: null }) ? 'dead' : 'live'}`)
      .sort()
      .join(',');
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

/** Each listed map's facts from multipath -ll, sysfs and multipathd's JSON (agrees: whether the two listings agree). */
async function mapFacts(
  host: Host,
  listed: ReturnType<typeof parseMultipathLl>['maps'],
  uuids: Map<string, string>,
  json: ReturnType<typeof parseMultipathdMapsJson> | null,
): Promise<{ maps: MapFacts[]; agrees: boolean | null }> {
  const maps: MapFacts[] = [];
  let agrees: boolean | null = json ? true : null;
  for (const m of listed) {
    const wwid = m.wwid;
    const problems = [...m.problems];
    // The name goes into argv (multipath -f, dmsetup message): a name outside the pattern is a
    // map we do not touch (its evidence is contradicted), whatever else it shows.
    if (!isMapName(m.name))
      problems.push(
        `the map name ${JSON.stringify(m.name.slice(0, 140))} is not a plain map name (letters, digits, _ . : -, not starting with - or .): not acted on`,
      );
    const bySysfs = [...uuids].find(([, u]) => wwidOfDmUuid(u) === normalizeWwid(wwid))?.[0] ?? null;
    const dm = m.dm ?? bySysfs;
    if (dm && bySysfs !== dm) problems.push(`sysfs does not show ${dm} as the map of WWID ${wwid} (${bySysfs ?? `no dm device has uuid mpath-${wwid}`})`);
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
      diskOpeners: [],
      probe: {
        outcome: 'not-run',
        durationMs: 0,
        exitCode: null,
        stuckPids: [],
        detail: 'not probed: the map has a path that is not dead',
      },
      byIdLinks: [],
      loopBacked: [],
      exportedBy: [],
      deadSince: null,
    });
  }

  return { maps, agrees };
}

/** What sits on top of a map without being a holder: loop devices backed by it, LIO backstores exporting it. */
async function findStacked(host: Host, maps: MapFacts[]): Promise<void> {
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

/** Intent records of earlier sequences: is their map still there, and if not, are their disks? */
async function intentFacts(
  host: Host,
  records: Awaited<ReturnType<typeof readIntents>>['records'],
  uuids: Map<string, string>,
  maps: readonly MapFacts[],
): Promise<IntentFacts[]> {
  const intents: IntentFacts[] = [];
  for (const record of records) {
    const mapPresent =
      [...uuids.values()].some((u) => wwidOfDmUuid(u) === normalizeWwid(record.wwid)) || maps.some((m) => normalizeWwid(m.wwid) === normalizeWwid(record.wwid));
    intents.push({ record, mapPresent, orphans: mapPresent ? [] : await orphanDisks(host, record.disks, record.wwid) });
  }

  return intents;
}

/** Mounts of each map or its disks (and of orphan disks) in every mount namespace; swap. */
async function findMounts(host: Host, maps: MapFacts[], intents: IntentFacts[]): Promise<Awaited<ReturnType<typeof scanMountNamespaces>>> {
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
async function findMapOpeners(
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

/**
 * Probes the dead maps that pass every cheaper interlock (one read each, with a hard deadline);
 * a probe that survived SIGKILL is one of the map's openers from now on. Returns those.
 */
async function probeDead(
  host: Host,
  dead: MapFacts[],
  ctx: Parameters<typeof cheapEvidence>[1],
  deps: ObserveDeps,
): Promise<Array<{ pid: number; startTime: string | null; dm: string }>> {
  const { policy } = deps;
  const candidates: MapFacts[] = [];
  for (const m of dead) {
    const blocked = cheapEvidence(m, ctx, policy).filter((e) => e.status !== 'holds');
    const earlier = m.openers.filter((o) => o.ownProbe);
    if (blocked.length) {
      m.probe = {
        outcome: 'not-run',
        durationMs: 0,
        exitCode: null,
        stuckPids: [],
        detail: `not probed: held by ${blocked.length} cheaper interlock(s) above`,
      };
    } else if (earlier.length) {
      // Our earlier probe is still stuck on it: reads hang. Another probe would only add one more process in D state.
      m.probe = {
        outcome: 'timed-out',
        durationMs: 0,
        exitCode: null,
        stuckPids: earlier.map((o) => o.pid),
        detail: `not probed again: our earlier probe(s) ${earlier.map((o) => o.pid).join(', ')} are still stuck on it`,
      };
    } else if (deps.dryRun && m.queueIfNoPath) {
      m.probe = {
        outcome: 'skipped-dry-run',
        durationMs: 0,
        exitCode: null,
        stuckPids: [],
        detail: 'dry-run: the map queues I/O (queue_if_no_path), so a read probe would hang in D state; enforce probes it first',
      };
    } else candidates.push(m);
  }
  const probes = await probeMaps(
    host,
    candidates.map((m) => m.dm as string),
    policy.probeTimeoutMs,
  );
  const stuckNow: Array<{ pid: number; startTime: string | null; dm: string }> = [];
  for (const m of candidates) {
    const p = probes.get(m.dm as string);
    if (!p) continue;
    m.probe = p;
    // A probe that survived SIGKILL holds the map open from now on: one of our own victims.
    for (const pid of p.stuckPids) {
      const who = await processFacts(host, pid);
      m.openers.push({ ...who, fds: 1, ownProbe: true });
      stuckNow.push({ pid, startTime: who.startTime, dm: m.dm as string });
    }
  }

  return stuckNow;
}

/** This job is one more observation of the dead maps (a map with a live path starts over); our stuck probes are remembered. */
async function recordDead(
  host: Host,
  deps: ObserveDeps,
  before: Awaited<ReturnType<typeof readObservations>>['observations'],
  dead: MapFacts[],
  openers: Map<string, Opener[]>,
  stuckNow: Array<{ pid: number; startTime: string | null; dm: string }>,
  bootId: string | null,
): Promise<void> {
  const now = deps.now().toISOString();
  const counted = recordSightings(
    before,
    dead.map((m) => normalizeWwid(m.wwid)),
    now,
    bootId,
  );
  const alive = new Set([...openers.values()].flat().map((o) => o.pid));
  counted.stuckProbes = [
    ...before.stuckProbes.filter((p) => p.bootId === bootId && alive.has(p.pid)),
    ...stuckNow.map((p) => ({ ...p, at: now, bootId })),
  ].slice(-256);
  for (const m of dead) {
    const s = counted.deadMaps[normalizeWwid(m.wwid)];
    if (s) m.deadSince = { since: s.since, samples: s.samples, acrossBoot: acrossBoot(s, bootId) };
  }
  // Dry-run changes nothing on the node, its own bookkeeping included: each dry-run is a first look.
  if (!deps.dryRun && JSON.stringify(counted) !== JSON.stringify(before)) await writeObservations(host, deps.stateDir, counted);
}

/** dmsetup's open count of each map. */
async function findOpenCounts(host: Host, maps: MapFacts[], t: { timeoutMs: number }): Promise<void> {
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

/** The /dev/disk/by-id links that name each map's WWID or lead to it or its disks. */
async function findByIdLinks(host: Host, maps: MapFacts[]): Promise<void> {
  const links = maps.length > 0 ? await readByIdLinks(host) : [];
  for (const m of maps) {
    const devices = new Set([m.dm, ...m.paths.map((p) => p.dev)].filter((d): d is string => d !== null));
    m.byIdLinks = byIdLinks(links, normalizeWwid(m.wwid), devices);
  }
}

export async function observe(job: ResidualMultipathJob, host: Host, deps: ObserveDeps): Promise<ResidualFacts> {
  const { policy } = deps;
  const t = { timeoutMs: policy.commandTimeoutMs };
  const node = job.target.node;
  const attachments = await attachmentsOf(deps.attached, node);
  const uuids = await dmUuids(host);
  const bootId = await readTrimmed(host, '/proc/sys/kernel/random/boot_id');
  const intentListing = await readIntents(host, deps.stateDir);
  const observeNotes: string[] = [];
  const base = {
    node,
    ranOn: deps.ranOn,
    mode: deps.dryRun ? ('dry-run' as const) : ('enforce' as const),
    observedAt: deps.now().toISOString(),
    attachments,
    mountNamespaces: 0,
    unreadableMountinfo: [],
    bootId,
    intents: [] as IntentFacts[],
    unreadableIntents: intentListing.unreadable,
    observeNotes,
  };

  const ll = await host.run(LIST_MAPS, t);
  if (wasSimulated(ll) || ll.exitCode !== 0 || ll.timedOut) {
    const why = wasSimulated(ll) ? 'multipath -ll was not run' : describeFailure(ll);
    const mpathDms = [...uuids].filter(([, u]) => wwidOfDmUuid(u) !== null).map(([dm]) => dm);
    return {
      ...base,
      listing: {
        ok: false,
        why: `${why}${mpathDms.length ? `; sysfs shows multipath maps ${mpathDms.join(', ')}` : '; sysfs shows no multipath map'}`,
      },
      maps: [],
      multipathdAgrees: null,
    };
  }
  const listing = parseMultipathLl(ll.stdout);

  const jsonRun = await host.run(SHOW_MAPS_JSON, t);
  const json = jsonRun.exitCode === 0 ? parseMultipathdMapsJson(jsonRun.stdout) : null;

  const { maps, agrees } = await mapFacts(host, listing.maps, uuids, json);

  await findStacked(host, maps);

  const intents = await intentFacts(host, intentListing.records, uuids, maps);

  const scan = await findMounts(host, maps, intents);

  const observations = await readObservations(host, deps.stateDir);
  if (observations.problem) observeNotes.push(observations.problem);
  const openers = await findMapOpeners(host, maps, intents, observations.observations, bootId);

  // Probe only maps whose every path is dead and that pass every cheaper interlock.
  const ctx = { ...base, mountNamespaces: scan.namespaces.length };
  const dead = maps.filter((m) => m.dm !== null && DEVICE_PATTERNS.dm.test(m.dm) && m.paths.length > 0 && m.paths.every(isDeadPath));
  const stuckNow = await probeDead(host, dead, ctx, deps);

  await recordDead(host, deps, observations.observations, dead, openers, stuckNow, bootId);

  // After the probes: a probe stuck on the map is one of its openers from now on.
  await findOpenCounts(host, maps, t);
  await findByIdLinks(host, maps);

  return {
    ...base,
    intents,
    listing: listing.stray.length ? { ok: false, why: `multipath -ll printed lines outside any map: ${listing.stray.slice(0, 3).join(' | ')}` } : { ok: true },
    maps,
    mountNamespaces: scan.namespaces.length,
    unreadableMountinfo: scan.unreadable,
    multipathdAgrees: agrees,
  };
}
