import type { ReportedPlaceholder } from '../../core/catalogue/placeholder-report.ts';
import { knownQueuesKey } from '../../adapters/redis/known-queues.ts';
import { readPlaceholderReports } from '../../adapters/jobstore/placeholder-reports.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';

// Every placeholder the node agents report attached (src/adapters/jobstore/placeholder-reports.ts),
// one row each, for GET /v1/placeholders, the fleet page, `volume-medic placeholders` and the
// pre-delete check. Read fresh at each request (one key per node queue): the uninstall check must
// not pass on an answer cached from before a placement. What cannot be trusted (a report that
// does not parse, a record file the agent could not read) is listed too: it may hide a placeholder.

interface PlaceholderRow extends ReportedPlaceholder {
  node: string;
  /** When the node's agent last looked. */
  reportedAt: string;
}

export interface PlaceholderList {
  placeholders: PlaceholderRow[];
  /** Record files an agent found but could not read: a placeholder may be behind each. */
  unreadable: { node: string; file: string }[];
  /** Reports that do not parse (or name another node): that node's placeholders are unknown. */
  invalid: { node: string; why: string }[];
}

export async function placeholderList(redis: RedisConnection, prefix: string): Promise<PlaceholderList> {
  const queues = (await redis.smembers(knownQueuesKey(prefix))).sort();
  const out: PlaceholderList = { placeholders: [], unreadable: [], invalid: [] };
  for (const r of await readPlaceholderReports(redis, prefix, queues)) {
    if ('invalid' in r) {
      out.invalid.push({ node: r.node, why: r.invalid });
      continue;
    }
    for (const p of r.report.placeholders) out.placeholders.push({ node: r.node, reportedAt: r.report.at, ...p });
    for (const file of r.report.unreadable) out.unreadable.push({ node: r.node, file });
  }
  return out;
}
