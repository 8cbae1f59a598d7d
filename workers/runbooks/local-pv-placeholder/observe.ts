import { posix } from 'node:path';
import { imageOutsideStateDir } from './image-path.ts';
import type { LocalPvPlaceholderJob } from '../../../src/core/catalogue/jobs.ts';
import { DEVICE_PATTERNS, isDiskLinkPath } from '../../../src/core/catalogue/names.ts';
import { TransientError } from '../../../src/core/errors.ts';
import type { FileInfo, Host } from '../../host/host.ts';
import { followLink } from '../../host/follow-link.ts';
import { assertDiskLinkPath, sysBlockPath } from '../../host/paths.ts';
import type { PathState, PlaceholderFacts, Sighting } from './facts.ts';
import { loopHolders } from './loop-holders.ts';
import { listLoops } from './loops.ts';
import type { NodeLabels, OptInLabel } from './node-labels.ts';
import type { PlaceholderStore } from './record-store.ts';
import { wwnOfDmUuid, wwnOfLinkName, wwnOfWwid } from './wwn.ts';

export interface ObserveDeps {
  labels: NodeLabels;
  optIn: OptInLabel;
  store: PlaceholderStore;
  ranOn: string;
  jobId: string;
  now: () => Date;
}

const BY_ID = '/dev/disk/by-id';
/** NVMe namespaces are not in DEVICE_PATTERNS (we never act on them), but a WWN can live there. */
const NVME = /^nvme[0-9]{1,4}n[0-9]{1,4}$/;

/** `major:minor` of a block device node, null for anything else. */
const devOf = (info: FileInfo | null | undefined): string | null =>
  info?.type === 'block' && info.major !== undefined && info.minor !== undefined ? `${info.major}:${info.minor}` : null;

async function pathState(host: Host, path: string): Promise<PathState> {
  const info = await host.lstat(path);
  if (!info) return { kind: 'missing' };
  if (info.type !== 'symlink') return { kind: 'not-a-link', type: info.type };
  const target = (await host.readlink(path)) ?? '';
  const end = await followLink(host, path);
  return { kind: 'link', target, resolvesTo: end.path, resolvedType: end.info?.type ?? null, resolvedDev: devOf(end.info) };
}

/** WWN per disk from sysfs: SCSI disks, NVMe namespaces and multipath maps (never loop devices). */
export async function sysfsDisks(host: Host): Promise<Map<string, string>> {
  const disks = new Map<string, string>();
  for (const name of await host.list('/sys/block')) {
    let wwn: string | null = null;
    if (DEVICE_PATTERNS.scsi.test(name)) wwn = wwnOfWwid((await host.readFile(sysBlockPath(name, 'device', 'wwid'))) ?? '');
    else if (DEVICE_PATTERNS.dm.test(name)) wwn = wwnOfDmUuid((await host.readFile(sysBlockPath(name, 'dm', 'uuid'))) ?? '');
    else if (NVME.test(name)) wwn = wwnOfWwid((await host.readFile(`/sys/block/${name}/wwid`)) ?? '');
    if (wwn) disks.set(name, wwn);
  }
  return disks;
}

/** Other by-id links naming the same WWN that lead to a block device which is not one of our loops. */
async function linkSightings(host: Host, path: string, wwn: string, ourLoops: Set<string>): Promise<Sighting[]> {
  const found: Sighting[] = [];
  for (const name of await host.list(BY_ID)) {
    const link = `${BY_ID}/${name}`;
    if (link === path || !isDiskLinkPath(link) || wwnOfLinkName(name) !== wwn) continue;
    const end = await followLink(host, link);
    if (end.info?.type === 'block' && !ourLoops.has(posix.basename(end.path))) found.push({ device: end.path, via: link, dev: devOf(end.info) });
  }
  return found;
}

export async function observe(job: LocalPvPlaceholderJob, host: Host, deps: ObserveDeps): Promise<PlaceholderFacts> {
  const { node, pv, path } = job.target;
  assertDiskLinkPath(path);
  let labels: Readonly<Record<string, string>> | null;
  try {
    labels = await deps.labels.labelsOf(node);
  } catch (err) {
    throw new TransientError(`cannot read the labels of node ${node}: ${(err as Error).message}`);
  }
  const value = labels?.[deps.optIn.key] ?? null;
  const wwn = wwnOfLinkName(posix.basename(path));

  const listing = await deps.store.list(host);
  const own = await deps.store.get(host, pv);
  const record = own === 'unreadable' ? null : own;
  const ourLoops = new Set(listing.records.map((r) => r.loop));

  const disks = await sysfsDisks(host);
  const sightings: Sighting[] = [];
  if (wwn) {
    for (const [name, w] of disks) {
      // sysfsDisks only names sd, dm and nvme devices, all safe in a /sys/block path.
      if (w === wwn)
        sightings.push({
          device: `/dev/${name}`,
          via: `/sys/block/${name}`,
          dev: (await host.readFile(`/sys/block/${name}/dev`))?.trim() || null,
        });
    }
    sightings.push(...(await linkSightings(host, path, wwn, ourLoops)));
  }

  const image = deps.store.imagePath(pv);
  const imageInfo = await host.lstat(image);
  const outside = await imageOutsideStateDir(host, deps.store, image);
  const attached = await listLoops(host);
  const seenAs = host.argPath(image);
  const releasing = [...new Set([...attached.filter((a) => a.backFile === seenAs).map((a) => a.loop), ...(record ? [record.loop] : [])])];
  return {
    action: job.action,
    release: {
      ...(job.release ?? { by: 'detector', force: false }),
      asked: job.evidence.map((e) => `${e.source}: ${e.summary}`).join('; '),
    },
    jobId: deps.jobId,
    observedAt: deps.now().toISOString(),
    node,
    ranOn: deps.ranOn,
    pv,
    path,
    optIn: { label: `${deps.optIn.key}=${deps.optIn.value}`, value, optedIn: value === deps.optIn.value },
    wwn,
    pathState: await pathState(host, path),
    sightings,
    disksPresent: [...new Set(disks.values())].sort(),
    record,
    recordUnreadable: own === 'unreadable',
    reservedLoops: listing.records.filter((r) => r.pv !== pv).map((r) => r.loop),
    attached,
    // plan() releases on a release job, or on a place job whose recorded disk is seen again.
    holders: job.action === 'release' || (record !== null && sightings.length > 0) ? await loopHolders(host, releasing, attached) : null,
    image: {
      path: image,
      seenByCommandsAs: seenAs,
      size: imageInfo?.type === 'file' ? imageInfo.size : null,
      ...(outside ? { outside } : {}),
    },
  };
}
