import type { Opener } from '../../host/proc-facts.ts';

// Who an opener of a dead map is: a known victim of the dead paths (udev workers,
// blkid, multipath tools, our own read probe) that may be released by failing the queued I/O,
// or a live user. D state proves nothing: a database waiting on queued I/O is in D state too,
// so anything not positively known as a victim is a user, and the map is left alone.

export type OpenerRole = { kind: 'victim'; why: string } | { kind: 'user'; why: string };

/** pid, comm, state and where it lives, for a reason a human can act on. */
export function describeOpener(o: Opener): string {
  const where = o.podUid ? `, pod UID ${o.podUid}` : o.cgroup ? `, cgroup ${o.cgroup}` : '';
  return `pid ${o.pid} (${o.comm}, state ${o.state}${where})`;
}

export function openerRole(o: Opener, victims: readonly string[]): OpenerRole {
  if (o.ownProbe) return { kind: 'victim', why: 'our own read probe, stuck on the queued I/O' };
  // A known system name inside a pod is not the node's udev or multipath: a user.
  if (victims.includes(o.comm) && o.podUid === null) return { kind: 'victim', why: `${o.comm} is a known victim of dead paths` };
  return { kind: 'user', why: o.podUid ? 'a process of a pod' : 'not a known victim of dead paths' };
}
