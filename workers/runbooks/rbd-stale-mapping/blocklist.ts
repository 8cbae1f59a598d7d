import { z } from '../../../src/core/zod.ts';
import { jsonValues } from './json-values.ts';

// `ceph osd blocklist ls`: which client addresses are fenced, and until when. JSON (16.2)
// prints the address list and then the range list; text prints `<addr> <until>` lines (and
// `listed N entries` on stderr).

export interface BlocklistEntry {
  addr: string;
  until: string;
}

const Entries = z.array(z.object({ addr: z.string(), until: z.string() }));

export function parseBlocklistJson(stdout: string): BlocklistEntry[] {
  const [first] = jsonValues(stdout);
  return first === undefined ? [] : Entries.parse(first);
}

export function parseBlocklistText(stdout: string): BlocklistEntry[] {
  const out: BlocklistEntry[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^(\S+) (\S+)$/.exec(line.trim());
    if (m) out.push({ addr: m[1]!, until: m[2]! });
  }
  return out;
}
