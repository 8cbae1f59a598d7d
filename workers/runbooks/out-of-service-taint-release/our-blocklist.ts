import type { Host } from '../../host/host.ts';
import type { BlocklistUndo } from '../rbd-stale-mapping/blocklist-undo.ts';
import { blocklist } from '../rbd-stale-mapping/ceph-commands.ts';
import type { OurBlocklistEntry } from './facts.ts';

/** Our undo records of the node, each with whether `ceph osd blocklist ls` still lists it (Ceph is asked only when there is one). */
export function ourBlocklistOf(undo: BlocklistUndo, cephHost: Host, now: () => Date): (node: string) => Promise<OurBlocklistEntry[]> {
  return async (node) => {
    const records = await undo.forNode(node, now());
    if (records.length === 0) return [];
    const listed = new Set((await blocklist(cephHost)).map((e) => e.addr));
    return records.map((r) => ({ address: r.address, job: r.job, addedAt: r.addedAt, listed: listed.has(r.address) }));
  };
}
