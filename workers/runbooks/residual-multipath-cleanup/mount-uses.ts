import type { MountEntry } from '../../host/mountinfo.ts';

/**
 * Does this mount use the block device? Either the file system is on it (same major:minor), or
 * its device node is bind-mounted (kubelet does that for block-mode volumes: a devtmpfs mount
 * whose root is `/dm-3`), or the source names it.
 */
export function mountUses(m: MountEntry, dev: { majorMinor: string; names: readonly string[] }): boolean {
  if (dev.majorMinor !== '' && m.majorMinor === dev.majorMinor) return true;
  const nodes = dev.names.flatMap((n) => [`/dev/${n}`, `/${n}`]);
  if (m.fsType === 'devtmpfs' && nodes.includes(m.root)) return true;
  return nodes.includes(m.source);
}
