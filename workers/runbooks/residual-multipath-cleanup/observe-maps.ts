import type { Host } from '../../host/host.ts';
import { sysBlockPath } from '../../host/paths.ts';
import { DEVICE_PATTERNS, isMapName } from '../../../src/core/catalogue/names.ts';
import type { IntentFacts, MapFacts, OrphanDisk, PathFacts } from './facts.ts';
import type { readIntents } from './intents.ts';
import { isDeadPath, pathsOf, type MultipathMap, type parseMultipathLl } from './multipath-ll.ts';
import type { JsonMapView, parseMultipathdMapsJson } from './multipathd-maps-json.ts';
import { diskIdentity, isSameDisk } from './sysfs-maps.ts';
import { normalizeWwid, wwidOfDmUuid, wwidOfSysfs } from './wwid.ts';

// observe.ts's first stage: each map `multipath -ll` lists, with what sysfs and multipathd say of
// it, and each intent record of an earlier sequence with its map or its disks still present.

export async function readTrimmed(host: Host, path: string): Promise<string | null> {
  const text = await host.readFile(path).catch(() => null);
  return text === null ? null : text.trim();
}

/** dm-N -> sysfs uuid, for every device-mapper device. */
export async function dmUuids(host: Host): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of await host.list('/sys/block')) {
    if (!DEVICE_PATTERNS.dm.test(name)) continue;
    const uuid = await readTrimmed(host, sysBlockPath(name, 'dm', 'uuid'));
    if (uuid !== null) out.set(name, uuid);
  }
  return out;
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

/** Each listed map's facts from multipath -ll, sysfs and multipathd's JSON (agrees: whether the two listings agree). */
export async function mapFacts(
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

/** Intent records of earlier sequences: is their map still there, and if not, are their disks? */
export async function intentFacts(
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
