import { z } from '../../../src/core/zod.ts';
import { isCephClientAddress } from '../../../src/core/catalogue/names.ts';

// Who watches an image's header object: `rados -p <pool> listwatchers <header>` (text only: it
// ignores --format) and `rbd status` (text or JSON). Each line is
// `watcher=<ip>:<port>/<nonce> client.<n> cookie=<n>`; the address is what `ceph osd blocklist`
// takes and, through its IP, which node holds the mapping.

export interface Watcher {
  /** `10.0.0.5:0/3710147553` */
  address: string;
  /** The IP alone (no brackets for IPv6): what a Node's status.addresses lists. */
  ip: string;
  /** `client.4116` */
  client: string;
  /** Kept as text: cookies are 64-bit and JSON numbers lose precision above 2^53. */
  cookie: string;
}

export interface WatcherListing {
  watchers: Watcher[];
  /** Lines that look like watchers but do not parse: never acted on, reported. */
  unparsed: string[];
}

const LINE = /^\s*watcher=(\S+) (client\.[0-9]+) cookie=([0-9]+)\s*$/;

export function ipOf(address: string): string {
  const m = /^\[([^\]]+)\]:|^([^:]+):/.exec(address);
  return m?.[1] ?? m?.[2] ?? '';
}

function watcher(address: string, client: string, cookie: string): Watcher | null {
  return isCephClientAddress(address) ? { address, ip: ipOf(address), client, cookie } : null;
}

/** `rados listwatchers` and the text form of `rbd status` share the line format. */
function parseWatcherLines(stdout: string): WatcherListing {
  const listing: WatcherListing = { watchers: [], unparsed: [] };
  for (const line of stdout.split('\n')) {
    if (!line.includes('watcher=')) continue;
    const m = LINE.exec(line);
    const w = m ? watcher(m[1]!, m[2]!, m[3]!) : null;
    if (w) listing.watchers.push(w);
    else listing.unparsed.push(line.trim());
  }
  return listing;
}

export const parseListWatchers = parseWatcherLines;
export const parseRbdStatusText = parseWatcherLines;

const StatusJson = z.object({
  watchers: z.array(z.object({ address: z.string(), client: z.union([z.number(), z.string()]), cookie: z.union([z.number(), z.string()]) })),
});

export function parseRbdStatusJson(stdout: string): WatcherListing {
  const j = StatusJson.parse(JSON.parse(stdout));
  // The cookie as printed, not as JSON.parse rounded it.
  const cookies = [...stdout.matchAll(/"cookie":\s*"?([0-9]+)/g)].map((m) => m[1]!);
  const listing: WatcherListing = { watchers: [], unparsed: [] };
  j.watchers.forEach((w, i) => {
    const client = typeof w.client === 'number' || /^[0-9]+$/.test(w.client) ? `client.${w.client}` : w.client;
    const parsed = watcher(w.address, client, cookies[i] ?? String(w.cookie));
    if (parsed) listing.watchers.push(parsed);
    else listing.unparsed.push(JSON.stringify(w));
  });
  return listing;
}
