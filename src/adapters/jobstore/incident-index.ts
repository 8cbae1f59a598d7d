import type { StoredIndex } from './store-pipeline.ts';
import type { RedisConnection } from '../redis/redis.ts';

// The console's index of incidents, newest first, so a page of the dashboard reads a bounded
// slice of Redis whatever the fleet's size: listing BullMQ's queues one by one costs a
// call per queue and state, 35,000 of them at 5,000 nodes. The receiver adds every job it stores
// as new: on a single Redis or a Sentinel primary inside the batch's own script call (ZADD and
// trim after the adds, src/adapters/jobstore/batch-add.ts: no second round trip per batch), on a Redis
// Cluster in a call of its own per batch (`record`, not awaited: the index is one key, in its own
// slot, and a script may touch one slot only; a batch there is already a call per queue). The member names
// the queue, the job, its node and its runbook, so node and runbook filters need no job read.
// One key (one Redis Cluster slot), trimmed to the newest `keep` entries; entries whose job is
// gone (retention) are dropped when a reader meets them.

export const incidentIndexKey = (prefix: string): string => `${prefix}:vm:ui:incidents`;

export interface IndexEntry {
  queue: string;
  id: string;
  node?: string;
  runbook: string;
  /** Index score: the store time in ms * 1000 + the job's place in its batch (unique, ordered). */
  score: number;
  member: string;
}

/** Default INCIDENT_INDEX_KEEP: the newest entries kept. */
const DEFAULT_INDEX_KEEP = 100_000;

// Tab never occurs in a queue name, a job id (JOB_ID), a node name or a runbook name.
const member = (e: { queue: string; id: string; node?: string | undefined; runbook: string }): string => `${e.queue}\t${e.id}\t${e.node ?? ''}\t${e.runbook}`;

function parseMember(m: string, score: number): IndexEntry | undefined {
  const [queue, id, node, runbook] = m.split('\t');
  if (!queue || !id || runbook === undefined) return undefined;
  return { queue, id, ...(node ? { node } : {}), runbook, score, member: m };
}

export class IncidentIndex implements StoredIndex {
  readonly #redis: RedisConnection;
  readonly #key: string;
  readonly #keep: number;

  constructor(redis: RedisConnection, prefix: string, keep = DEFAULT_INDEX_KEEP) {
    this.#redis = redis;
    this.#key = incidentIndexKey(prefix);
    this.#keep = keep;
  }

  /** The index's key: the dispatcher writes it in the batch's script call (src/adapters/jobstore/dispatcher.ts). */
  get key(): string {
    return this.#key;
  }

  /** How many entries the index keeps (the newest). */
  get keep(): number {
    return this.#keep;
  }

  /** A job's member. */
  member(job: { queue: string; id: string; node?: string | undefined; runbook: string }): string {
    return member(job);
  }

  /** Records jobs stored at `at` (ms). A job stored again later (after its retention) moves to the top. */
  async record(jobs: readonly { queue: string; id: string; node?: string | undefined; runbook: string }[], at: number): Promise<void> {
    if (jobs.length === 0) return;
    const args: (string | number)[] = [];
    for (const [i, j] of jobs.entries()) args.push(at * 1000 + (i % 1000), member(j));
    await this.#redis
      .multi()
      .zadd(this.#key, ...args)
      .zremrangebyrank(this.#key, 0, -(this.#keep + 1))
      .exec();
  }

  /** Up to `count` entries older than `before` (a score, exclusive; none: the newest). */
  async older(before: number | undefined, count: number): Promise<IndexEntry[]> {
    const max = before === undefined ? '+inf' : `(${before}`;
    const raw = await this.#redis.zrevrangebyscore(this.#key, max, '-inf', 'WITHSCORES', 'LIMIT', 0, count);
    const out: IndexEntry[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const e = parseMember(raw[i]!, Number(raw[i + 1]));
      if (e) out.push(e);
    }
    return out;
  }

  /**
   * Every entry of `node`, newest first, at most `max`: ZSCAN with a pattern, so Redis filters
   * (O(size) in Redis, a few ms at 10,000 entries) and only the node's entries cross the wire,
   * instead of the whole index read into the receiver to keep a node's few.
   */
  async ofNode(node: string, max: number, count = 5_000): Promise<IndexEntry[]> {
    // Node names (RFC 1123) hold no glob character.
    const out = await this.#scan(`*\t${node}\t*`, count, (e) => e.node === node);
    // ZSCAN may return an element twice (the set changed under it): once each, newest first.
    const unique = [...new Map(out.map((e) => [e.member, e])).values()].sort((a, b) => b.score - a.score);
    return unique.slice(0, max);
  }

  /**
   * Where the index has job `id` (the newest entry when an id was stored more than once), found
   * with ZSCAN over the members: O(size) in Redis (tens of ms at 100,000 entries), never a call
   * per queue. Undefined when the index has no such job (trimmed, or stored before the index).
   */
  async locate(id: string, count = 5_000): Promise<IndexEntry | undefined> {
    // Job ids (JOB_ID) hold no glob character, so the pattern matches the id field literally.
    let best: IndexEntry | undefined;
    for (const e of await this.#scan(`*\t${id}\t*`, count, (x) => x.id === id)) if (!best || e.score > best.score) best = e;
    return best;
  }

  /** Every entry whose member matches `pattern` (ZSCAN: Redis filters) and `keep`; possibly some twice. */
  async #scan(pattern: string, count: number, keep: (e: IndexEntry) => boolean): Promise<IndexEntry[]> {
    const out: IndexEntry[] = [];
    let cursor = '0';
    do {
      const [next, raw] = await this.#redis.zscan(this.#key, cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        const e = parseMember(raw[i]!, Number(raw[i + 1]));
        if (e && keep(e)) out.push(e);
      }
    } while (cursor !== '0');
    return out;
  }

  async forget(members: readonly string[]): Promise<void> {
    if (members.length) await this.#redis.zrem(this.#key, ...members);
  }

  size(): Promise<number> {
    return this.#redis.zcard(this.#key);
  }
}
