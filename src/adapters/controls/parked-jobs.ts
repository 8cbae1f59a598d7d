import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import { ParkedJob, parseJson } from '../../core/controls/records.ts';
import { controlKeys, queueControlKeys } from '../../core/controls/redis-keys.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { knownQueueNames, readEach } from './queue-reads.ts';

// The parked jobs (ControlsStore.park and its readers): each under its own queue's hash, which
// that queue's worker may write, and the transition hash of agents not yet upgraded.

/**
 * A parked record in the transition hash (keys.ts legacyParked) counts while younger than this:
 * an agent not yet upgraded parks its job again (a fresh `since`) at every recheck, so a live one
 * always is; one left behind by a job an upgraded agent then ran (it unparks under its queue
 * only) drops out instead of showing as waiting forever.
 */
const LEGACY_PARKED_FRESH_MS = 3600_000;

export class ParkedJobs {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #now: () => Date;

  constructor(redis: RedisConnection, prefix: string, now: () => Date) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#now = now;
  }

  /** Lists the job as parked, under its own queue (p.queue). */
  async park(p: ParkedJob): Promise<void> {
    await this.#redis.hset(queueControlKeys(this.#prefix, p.queue).parked, p.jobId, JSON.stringify(p));
  }

  async unpark(queue: string, jobId: string): Promise<void> {
    await this.#redis.hdel(queueControlKeys(this.#prefix, queue).parked, jobId);
  }

  /**
   * Every known queue's parked jobs (and the transition hash's live ones), oldest first. A
   * record counts only under the queue it names: a node's user can write its own hash only, and
   * a record there claiming another queue's job would otherwise get that job promoted or shown.
   * Its node is its queue's (a record in node-a's hash naming node-b is node-a's: shown, counted
   * and released as node-a's).
   */
  async parkedJobs(): Promise<ParkedJob[]> {
    const queues = await knownQueueNames(this.#redis, this.#prefix);
    const hashes = (await readEach(this.#redis, [controlKeys(this.#prefix).legacyParked, ...queues.map((q) => queueControlKeys(this.#prefix, q).parked)], {
      cmd: 'hgetall',
    })) as Record<string, string>[];
    const byId = new Map<string, ParkedJob>();
    const fresh = this.#now().getTime() - LEGACY_PARKED_FRESH_MS;
    for (const t of Object.values(hashes[0] ?? {})) {
      const p = parseJson(ParkedJob, t);
      if (p && Date.parse(p.since) >= fresh) byId.set(p.jobId, p);
    }
    queues.forEach((q, i) => {
      for (const [jobId, t] of Object.entries(hashes[i + 1] ?? {})) {
        const p = parseJson(ParkedJob, t);
        if (!p || p.queue !== q || p.jobId !== jobId) continue;
        const own = nodeOfQueue(q);
        byId.set(jobId, own === undefined || p.node === own ? p : { ...p, node: own });
      }
    });
    return [...byId.values()].sort((a, b) => a.since.localeCompare(b.since));
  }
}
