// What a 2-core machine can carry at the CPU costs a bench run measured, per item (an alert or
// an Event: one job each when new). Two bounds, both from CPU time, not from the wall clock:
// - Redis's main thread runs every script on one core: at `redis` us per job it stores at most
//   1e6 / redis jobs per second, whatever sends them;
// - the server, Redis and the load generator (on the same machine, as issue 8 asks) share the
//   cores: at their summed cost per item, `cores` cores carry at most cores * 1e6 / sum items/s.

export interface PerItemUs {
  server: number;
  redis: number;
  loadGen: number;
}

export interface Ceiling {
  /** Items per second one Redis main thread can take at `redis` us each. */
  redis: number;
  /** Items per second the machine's cores can take at server + redis + loadGen us each. */
  machine: number;
}

export function ceiling(us: PerItemUs, cores: number): Ceiling {
  for (const [k, v] of Object.entries(us)) {
    if (!(v >= 0) || !Number.isFinite(v)) throw new Error(`ceiling: ${k} must be a finite CPU time >= 0 us, got ${v}`);
  }
  if (!(cores >= 1)) throw new Error(`ceiling: cores must be >= 1, got ${cores}`);
  const perSecond = (costUs: number, coresUsed: number): number => (costUs > 0 ? Math.floor((coresUsed * 1e6) / costUs) : Infinity);
  return { redis: perSecond(us.redis, 1), machine: perSecond(us.server + us.redis + us.loadGen, cores) };
}
