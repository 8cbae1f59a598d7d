import { readAgentRuns, type AgentRuns } from '../../adapters/jobstore/agent-runs.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { LogSummary } from '../../adapters/observability/log-summary.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { beyondBaseline } from '../../core/catalogue/announced.ts';
import type { RemediationJob, RunbookName } from '../../core/catalogue/jobs.ts';
import { nodeOfQueue, queueFor } from '../../core/catalogue/queues.ts';
import { StoreUnavailableError } from '../../core/jobs/job-store.ts';
import type { Ignored } from '../../core/signals/index.ts';

// The receiver's last word before a job is stored, on every path that makes one (the webhooks and
// the receiver's own watches all ingest through ingest.ts): a job beyond what every supported
// release runs (src/core/catalogue/announced.ts) goes only to a queue whose agent announced it
// (src/adapters/jobstore/agent-runs.ts). Otherwise it is not stored but answered as ignored
// (`agent-too-old`): one `helm upgrade` rolls the receivers long before the DaemonSet, and a job
// an older agent cannot parse would be failed for good with its key spent. What brings the work
// back once the agent is upgraded is the runbook's own (RECOVERS below; docs/install.md, Upgrading).
//
// Cost: nothing for a baseline job (no read). Otherwise one GET per queue, shared by concurrent
// asks; an announcement is remembered for POSITIVE_MS, its absence for NEGATIVE_MS (a flood of
// held signals for one node reads once per that, and an upgraded agent is believed within it).

const POSITIVE_MS = 10_000;
const NEGATIVE_MS = 2_000;
/** Queues remembered (answers and log summaries): node names come from senders, so what they make us hold is bounded. */
const MAX_QUEUES = 20_000;

/** What happens to a held job's work once the agent runs its runbook. */
const RECOVERS: Partial<Record<RunbookName, string>> = {
  'readonly-filesystem-recovery': 'its own read-only scan finds this once it is upgraded',
  'orphaned-pod-volumes': 'its own orphan scan finds this once it is upgraded',
  'out-of-service-taint-release': "the receiver's Node watch asks again at its next resync once it is upgraded",
};
const RECOVERS_OTHERWISE = 'the next repeat of the signal is stored once it is upgraded';

export interface AgentGateOptions {
  log?: Logger;
  now?: () => number;
}

export class AgentGate {
  readonly #read: (queue: string) => Promise<AgentRuns | undefined>;
  readonly #now: () => number;
  readonly #log: Logger | undefined;
  readonly #cache = new Map<string, { runs: AgentRuns | undefined; until: number }>();
  readonly #reading = new Map<string, Promise<AgentRuns | undefined>>();
  readonly #summaries = new Map<string, LogSummary>();

  constructor(read: (queue: string) => Promise<AgentRuns | undefined>, o: AgentGateOptions = {}) {
    this.#read = read;
    this.#now = o.now ?? Date.now;
    this.#log = o.log;
  }

  /** The gate over the receiver's Redis (announcements under `prefix`). */
  static onRedis(redis: RedisConnection, prefix: string, o: AgentGateOptions = {}): AgentGate {
    return new AgentGate((queue) => readAgentRuns(redis, prefix, queue), o);
  }

  /** The jobs that may be stored, and why the others are not. Throws StoreUnavailableError when Redis cannot say (the sender retries). */
  async admit(jobs: readonly RemediationJob[]): Promise<{ jobs: RemediationJob[]; ignored: Ignored[] }> {
    const asks = jobs.map((job) => beyondBaseline(job));
    if (asks.every((a) => a === undefined)) return { jobs: [...jobs], ignored: [] };
    const held = new Map<number, Ignored>();
    await Promise.all(
      jobs.map(async (job, i) => {
        const ask = asks[i];
        if (ask === undefined) return;
        const queue = queueFor(job);
        const runs = await this.#runs(queue);
        const missing = [
          ...(ask.runbook && !runs?.runbooks.includes(ask.runbook) ? [ask.runbook] : []),
          ...ask.sources.filter((s) => !runs?.sources.includes(s)),
        ];
        if (missing.length > 0) held.set(i, this.#held(job, queue, missing));
      }),
    );
    // In the jobs' order, whatever order the reads answered in.
    return { jobs: jobs.filter((_, i) => !held.has(i)), ignored: [...held.keys()].sort((a, b) => a - b).map((i) => held.get(i)!) };
  }

  async #runs(queue: string): Promise<AgentRuns | undefined> {
    const cached = this.#cache.get(queue);
    const now = this.#now();
    if (cached && cached.until > now) return cached.runs;
    let p = this.#reading.get(queue);
    if (!p) {
      p = this.#read(queue).finally(() => this.#reading.delete(queue));
      this.#reading.set(queue, p);
    }
    let runs: AgentRuns | undefined;
    try {
      runs = await p;
    } catch (err) {
      throw new StoreUnavailableError(`reading what the agent of ${queue} runs failed: ${(err as Error).message}`);
    }
    if (this.#cache.size >= MAX_QUEUES) this.#cache.clear();
    this.#cache.set(queue, { runs, until: now + (runs ? POSITIVE_MS : NEGATIVE_MS) });
    return runs;
  }

  #held(job: RemediationJob, queue: string, missing: readonly string[]): Ignored {
    const node = nodeOfQueue(queue);
    const who = node !== undefined ? `node ${node}'s agent` : 'the cluster worker';
    const recovers = RECOVERS[job.runbook] ?? RECOVERS_OTHERWISE;
    const detail = `${who} does not run ${missing.join(', ')} yet (an older release, or none started yet): not queued; ${recovers}`;
    let summary = this.#summaries.get(queue);
    if (!summary && this.#log) {
      if (this.#summaries.size >= MAX_QUEUES) this.#summaries.clear();
      summary = new LogSummary(this.#log, 'a job was held: its agent does not announce what it needs (docs/install.md, Upgrading)');
      this.#summaries.set(queue, summary);
    }
    summary?.warn({ queue, key: job.key, runbook: job.runbook, missing });
    return { reason: 'agent-too-old', detail, source: job.evidence[0]!.source };
  }
}
