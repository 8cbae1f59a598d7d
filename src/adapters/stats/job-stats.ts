import { labelValue } from '../observability/text-format.ts';
import type { CounterBatch } from '../../core/jobs/job-store.ts';
import { execAll } from '../redis/exec-all.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';

// Finished-job counters and durations live in Redis hashes of one layout (this file's contract):
// a worker writes its own queue's (queueStatsKey, under the queue's hash tag and its Redis user's
// keys, so a node's user can write its own node's counts and nobody else's), the processes that
// are no queue's worker the shared one (statsKey: the cluster worker's no-agent check; and every
// count written before per-queue statistics). The receiver's /metrics adds them all up, so one
// scrape shows the whole fleet.

const DURATION_BUCKETS_S = [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900] as const;

/** The shared hash. */
export const statsKey = (prefix: string): string => `${prefix}:vm:stats`;

/** The hash of one queue's worker. */
export const queueStatsKey = (prefix: string, queue: string): string => `${prefix}:${queue}:vm:stats`;

/** Record one finished job in the hash at `key` (outcome: the RunbookResult outcome, or `error`). */
export async function recordFinished(redis: RedisConnection, key: string, runbook: string, outcome: string, durationS: number): Promise<void> {
  const p = redis.pipeline();
  queueFinished(p, key, runbook, outcome, durationS);
  await execAll(p);
}

/** recordFinished's commands, added to a pipeline the caller sends (with the job's log line: one round trip). */
export function queueFinished(p: CounterBatch, key: string, runbook: string, outcome: string, durationS: number): void {
  // One counter per runbook, outcome and the duration's bucket: the exposition adds them up into
  // the finished total per outcome and Prometheus' cumulative buckets (2 commands per job, not up
  // to 13: bench:lifecycle, job cost).
  p.hincrby(key, `ran|${runbook}|${outcome}|${DURATION_BUCKETS_S.find((le) => durationS <= le) ?? '+Inf'}`, 1);
  // Whole milliseconds with HINCRBY: HINCRBYFLOAT parses and prints a long double, and Redis
  // sends it to replicas and the AOF as an HSET of the new value (bench:lifecycle, instructions).
  p.hincrby(key, `summs|${runbook}`, Math.round(durationS * 1000));
}

/**
 * Record a job that finished without running (outcome e.g. `no-agent`: failed because no node
 * agent took it, workers/cluster-worker/no-agent-watch.ts): counted in volume_medic_jobs_finished_total,
 * no duration (it never ran).
 */
export async function recordNotRun(redis: RedisConnection, prefix: string, runbook: string, outcome: string): Promise<void> {
  await redis.hincrby(statsKey(prefix), `finished|${runbook}|${outcome}`, 1);
}

/**
 * Record work or a control record refused as untrusted (unsigned, badly sealed, expired,
 * replayed, from the wrong issuer): `kind` is job | mode | pause | approval.
 */
export async function recordUntrusted(redis: RedisConnection, key: string, kind: string, reason: string): Promise<void> {
  await redis.hincrby(key, `untrusted|${kind}|${reason}`, 1);
}

const BUCKET_LABELS: readonly string[] = [...DURATION_BUCKETS_S.map(String), '+Inf'];

// Every known queue's hash: one script per 250 queues on a single Redis, one queue per call on a
// Cluster (each queue its own slot). Queues leave the registry never, so no count drops out. A
// node writes its own queue's hash and may pad it: a hash of more than MAX_QUEUE_FIELDS fields is
// not read (false, counted as unread) so that no node can make the scrape slow or its labels many.
export const READ_HASHES = luaScript(
  'volumeMedicReadStats',
  `
local out = {}
for i = 1, #KEYS do
  if redis.call('HLEN', KEYS[i]) > tonumber(ARGV[1]) then out[i] = false
  else out[i] = redis.call('HGETALL', KEYS[i]) end
end
return out`,
);

/** More fields than a queue's runbooks, outcomes, buckets and refusal reasons can make (~300). */
export const MAX_QUEUE_FIELDS = 1000;

/** Each queue's hash, or null for one too large to read. */
async function queueHashes(redis: RedisConnection, prefix: string): Promise<(Record<string, string> | null)[]> {
  const queues = (await redis.smembers(knownQueuesKey(prefix))).sort();
  return inLanes(queues, laneShape(redis, {}, { chunk: 250, parallel: 1 }), async (qs) => {
    const raw = await scriptOn(redis, READ_HASHES)(qs.length, ...qs.map((q) => queueStatsKey(prefix, q)), MAX_QUEUE_FIELDS);
    if (!Array.isArray(raw) || raw.length !== qs.length) throw new Error(`job statistics: expected ${qs.length} hashes`);
    return raw.map((flat) => {
      if (!Array.isArray(flat)) return null;
      const h: Record<string, string> = {};
      for (let i = 0; i + 1 < flat.length; i += 2) h[String(flat[i])] = String(flat[i + 1]);
      return h;
    });
  });
}

/**
 * The largest count one hash may add: 2^32 jobs is more than a node runs in its life, and 50,000
 * queues of it add up to less than 2^53, so the sum still counts every single job exactly.
 */
export const MAX_COUNT = 2 ** 32;

/**
 * The fields of many hashes added up. A queue's hash is written by that queue's node, which may
 * lie about itself but must not take from others: a value that is not a number, below 0 (a
 * counter only grows) or above MAX_COUNT (a sum so large that the fleet's own increments vanish
 * in its rounding) counts 0.
 */
export function addUp(hashes: readonly Record<string, string>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of hashes) {
    for (const [field, value] of Object.entries(h)) {
      const n = Number(value);
      if (Number.isFinite(n) && n > 0 && n <= MAX_COUNT) out[field] = (out[field] ?? 0) + n;
    }
  }
  return out;
}

/** Prometheus text exposition of the fleet-wide counters: the shared hash and every queue's. */
export async function finishedExposition(redis: RedisConnection, prefix: string): Promise<string> {
  const [shared, queues] = await Promise.all([redis.hgetall(statsKey(prefix)), queueHashes(redis, prefix)]);
  const read = queues.filter((q): q is Record<string, string> => q !== null);
  return exposition(addUp([shared, ...read]), queues.length - read.length);
}

/** The exposition of counters already added up; `unread`: queues whose hash was too large to read. */
function exposition(h: Record<string, number>, unread = 0): string {
  const finished = new Map<string, number>();
  const untrusted: string[] = [];
  const buckets = new Map<string, Map<string, number>>();
  const sums = new Map<string, number>();
  const countFinished = (runbook: string, outcome: string, n: number): void => {
    const k = `${runbook}|${outcome}`;
    finished.set(k, (finished.get(k) ?? 0) + n);
  };
  /** `cumulative`: the count is already the bucket's with every smaller one (the fields earlier releases wrote). */
  const countIn = (runbook: string, le: string, n: number, cumulative: boolean): void => {
    const at = BUCKET_LABELS.indexOf(le);
    if (at < 0) return;
    const m = buckets.get(runbook) ?? new Map<string, number>();
    for (const l of cumulative ? [le] : BUCKET_LABELS.slice(at)) m.set(l, (m.get(l) ?? 0) + n);
    buckets.set(runbook, m);
  };
  for (const [field, n] of Object.entries(h)) {
    const [kind, runbook = '', extra = '', le = ''] = field.split('|');
    // `ran|<runbook>|<outcome>|<le>`: a job that ran (what is written now). `finished|`: a job that
    // never ran (recordNotRun), and every job before; `in|` and `bucket|`: durations before.
    if (kind === 'ran') {
      countFinished(runbook, extra, n);
      countIn(runbook, le, n, false);
    } else if (kind === 'finished') countFinished(runbook, extra, n);
    else if (kind === 'bucket' || kind === 'in') countIn(runbook, extra, n, kind === 'bucket');
    else if (kind === 'sum') sums.set(runbook, (sums.get(runbook) ?? 0) + n);
    // `summs|`: milliseconds (written now); `sum|`: seconds earlier releases wrote (kept as they are).
    else if (kind === 'summs') sums.set(runbook, (sums.get(runbook) ?? 0) + n / 1000);
    else if (kind === 'untrusted') untrusted.push(`volume_medic_untrusted_refused_total{kind="${labelValue(runbook)}",reason="${labelValue(extra)}"} ${n}`);
  }
  const lines = [
    '# HELP volume_medic_jobs_finished_total Remediation jobs finished, by runbook and outcome (all workers).',
    '# TYPE volume_medic_jobs_finished_total counter',
    ...[...finished]
      .map(([k, n]) => {
        const [runbook = '', outcome = ''] = k.split('|');
        return `volume_medic_jobs_finished_total{runbook="${labelValue(runbook)}",outcome="${labelValue(outcome)}"} ${n}`;
      })
      .sort(),
    '# HELP volume_medic_untrusted_refused_total Jobs and control records an agent refused to act on: unsigned, badly sealed, expired, replayed or from the wrong issuer (all workers).',
    '# TYPE volume_medic_untrusted_refused_total counter',
    ...untrusted.sort(),
    '# HELP volume_medic_job_stats_unread_queues Queues whose statistics hash holds more fields than any agent writes: not added up (a node padding its own hash).',
    '# TYPE volume_medic_job_stats_unread_queues gauge',
    `volume_medic_job_stats_unread_queues ${unread}`,
    '# HELP volume_medic_job_duration_seconds Time a runbook took, from start to result (all workers).',
    '# TYPE volume_medic_job_duration_seconds histogram',
  ];
  for (const [runbook, m] of [...buckets].sort(([a], [b]) => a.localeCompare(b))) {
    for (const le of BUCKET_LABELS) {
      lines.push(`volume_medic_job_duration_seconds_bucket{runbook="${labelValue(runbook)}",le="${le}"} ${m.get(le) ?? 0}`);
    }
    lines.push(`volume_medic_job_duration_seconds_sum{runbook="${labelValue(runbook)}"} ${sums.get(runbook) ?? 0}`);
    lines.push(`volume_medic_job_duration_seconds_count{runbook="${labelValue(runbook)}"} ${m.get('+Inf') ?? 0}`);
  }
  return `${lines.join('\n')}\n`;
}
