import { posix } from 'node:path';
import { DEVICE_PATTERNS } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import { sysBlockPath } from '../../host/paths.ts';
import { normalizeWwid, wwidConflicts, wwidOfDmUuid, wwidOfSysfs } from './wwid.ts';

// The kernel's view (sysfs) of maps and disks, for checks right before and after a change.
// Identity is the WWID (and a disk's H:C:T:L), never the name alone: after `multipath -f` and a
// delete, the names dm-N and sdX are free for the next device the kernel finds.

/** The dm-N whose uuid is `mpath-<wwid>`, or null when no such map exists. */
export async function dmOfWwid(host: Host, wwid: string): Promise<string | null> {
  for (const name of await host.list('/sys/block')) {
    if (!DEVICE_PATTERNS.dm.test(name)) continue;
    const uuid = await host.readFile(sysBlockPath(name, 'dm', 'uuid'));
    if (uuid !== null && wwidOfDmUuid(uuid) === normalizeWwid(wwid)) return name;
  }
  return null;
}

export interface DiskIdentity {
  hctl: string | null;
  wwid: string | null;
}

/** Who /sys/block/<disk> is now; null when there is no such disk. */
export async function diskIdentity(host: Host, disk: string): Promise<DiskIdentity | null> {
  if ((await host.lstat(sysBlockPath(disk))) === null) return null;
  const link = await host.readlink(sysBlockPath(disk, 'device'));
  const wwid = await host.readFile(sysBlockPath(disk, 'device', 'wwid'));
  return { hctl: link === null ? null : posix.basename(link), wwid: wwid === null ? null : wwidOfSysfs(wwid) };
}

/** Is the disk now present the one a step meant (same H:C:T:L when known, and no other WWID)? */
export function isSameDisk(now: DiskIdentity, meant: { hctl: string | null; wwid: string }): boolean {
  if (meant.hctl !== null && now.hctl !== null && now.hctl !== meant.hctl) return false;
  if (wwidConflicts(now.wwid, meant.wwid)) return false;
  return true;
}
