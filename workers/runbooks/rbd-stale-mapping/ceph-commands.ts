import type { Host } from '../../host/host.ts';
import { expectOk } from '../../host/command-failed.ts';
import { parseBlocklistJson, type BlocklistEntry } from './blocklist.ts';
import { isNoSuchImage, parseRbdInfoJson, type RbdImageInfo } from './rbd-info.ts';
import { parseListWatchers, parseRbdStatusJson, type WatcherListing } from './watchers.ts';

// The Ceph commands the cluster half runs, argv without credentials (ceph-access.ts adds them
// below the audit). JSON where the tool offers it; `rados listwatchers` only prints text.

const rbdInfoArgv = (pool: string, image: string): string[] => ['rbd', 'info', '--format', 'json', `${pool}/${image}`];
const listWatchersArgv = (pool: string, header: string): string[] => ['rados', '-p', pool, 'listwatchers', header];
const rbdStatusArgv = (pool: string, image: string): string[] => ['rbd', 'status', '--format', 'json', `${pool}/${image}`];
const BLOCKLIST_LS = ['ceph', 'osd', 'blocklist', 'ls', '--format', 'json'] as const;
export const blocklistAddArgv = (address: string, expirySeconds: number): string[] => ['ceph', 'osd', 'blocklist', 'add', address, String(expirySeconds)];

/** The image, or null with the reason when it (or its pool) does not exist. */
export async function rbdInfo(host: Host, pool: string, image: string): Promise<RbdImageInfo | { missing: string }> {
  const r = await host.run(rbdInfoArgv(pool, image));
  if (r.exitCode !== 0 && !r.timedOut && isNoSuchImage(r.stderr)) return { missing: r.stderr.trim() };
  return parseRbdInfoJson(expectOk(r).stdout);
}

export async function listWatchers(host: Host, pool: string, header: string): Promise<WatcherListing> {
  return parseListWatchers(expectOk(await host.run(listWatchersArgv(pool, header))).stdout);
}

export async function rbdStatus(host: Host, pool: string, image: string): Promise<WatcherListing> {
  return parseRbdStatusJson(expectOk(await host.run(rbdStatusArgv(pool, image))).stdout);
}

export async function blocklist(host: Host): Promise<BlocklistEntry[]> {
  return parseBlocklistJson(expectOk(await host.run([...BLOCKLIST_LS])).stdout);
}
