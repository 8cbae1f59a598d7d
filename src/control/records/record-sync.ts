import type { StoredJob } from '../../core/jobs/job-store.ts';
import type { JobStateName } from '../../adapters/jobstore/job-states.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { recordName } from '../console/record-name.ts';
import { FINAL_STATES, MANAGED_BY, recordOf, type RecordContext, type RecordStatus } from './volume-remediation.ts';

// Keeps one VolumeRemediation per job in step with the job store, off the jobs' path: a job is
// stored and run without waiting for any of this. One receiver does it (the Lease's leader), on
// a timer, in batches:
// - the records it wrote are remembered (name -> the job's scanned state), listed from the API
//   server when it starts leading and every `resyncMs` after (a record deleted by hand is made
//   again then, while Redis still holds its job);
// - each round looks at the jobs stored since the last round (the console's incident index) and
//   at the jobs whose record is not final yet, asks Redis their states in one script call per
//   chunk (job-states.ts), and reads and writes only the jobs whose state moved: a new job costs a
//   create and a status patch, each later state a status patch, its end a delete;
// - a final record (completed, failed) outlives its job: Redis keeps finished jobs for the
//   deduplication window only (15 minutes by default), the record for `retentionMs` after the job
//   finished. A record whose job vanished before finishing (deleted, Redis lost) says so (phase
//   Unknown, reason job-gone) and is kept as long.
// Costs per job: 2 requests at its first sight, 1 per later state seen, 1 delete after the
// retention (a job seen waiting, running and done: 4, then the delete), plus one paged LIST per
// resync for all of them.

interface RecordsPort {
  list(labelSelector: string): Promise<Record<string, unknown>[]>;
  /** False: an object of that name exists already. */
  create(body: Record<string, unknown>): Promise<boolean>;
  /** False: the object is gone. */
  patchStatus(name: string, status: Record<string, unknown>): Promise<boolean>;
  remove(name: string): Promise<void>;
}

export interface JobRef {
  queue: string;
  id: string;
}

/** The job store as the sync reads it (records-source.ts over Redis). */
export interface RecordJobs {
  /** Jobs stored at or after `sinceMs`, newest first, at most `max`. */
  storedSince(sinceMs: number, max: number): Promise<JobRef[]>;
  /** Each job's state now, in order (`gone`: not in Redis any more). */
  states(jobs: readonly JobRef[]): Promise<JobStateName[]>;
  /** The job and its store state, or undefined when gone. */
  read(queue: string, id: string): Promise<{ job: StoredJob; state: string } | undefined>;
}

export interface RecordSyncOptions extends RecordContext {
  records: RecordsPort;
  jobs: RecordJobs;
  /** How long a record stays after its job finished (RECORD_RETENTION_HOURS). */
  retentionMs: number;
  /** How often the records are listed again from the API server (default 10 minutes). */
  resyncMs?: number;
  /** Most index entries read per round (default 5,000). */
  scanMax?: number;
  /** Most records written per round (a create and a patch, or a patch); the rest is carried to the next (default 250). */
  writesMax?: number;
  /** Writes in flight at once (default 8). */
  parallel?: number;
  now?: () => number;
  log: Logger;
}

interface Known extends JobRef {
  jobState: string;
  /** When the job finished (ms), else when the record was made. */
  since: number;
}

export interface RoundCounts {
  listed: boolean;
  checked: number;
  created: number;
  patched: number;
  deleted: number;
}

/** Status fields a patch clears when the new status lacks them (a merge patch keeps what it does not name). */
const CLEARABLE = ['mode', 'outcome', 'summary', 'reason', 'why', 'startedAt', 'finishedAt', 'consoleURL'] as const;
/** Index entries stored this long before the last round's newest are read again: receivers' clocks and late batches. */
const OVERLAP_MS = 60_000;

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The patch that makes a record's status `s` exactly. */
function statusPatch(s: RecordStatus): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...s };
  for (const k of CLEARABLE) if (s[k] === undefined) patch[k] = null;
  return patch;
}

export class RecordSync {
  readonly #o: RecordSyncOptions;
  readonly #now: () => number;
  #known: Map<string, Known> | undefined;
  #nextList = 0;
  /** When the last round began (ms): the next reads the jobs stored since (less OVERLAP_MS). */
  #lastRound = 0;
  /** Jobs whose state moved but that a round had no room to write (writesMax): the next round's first. */
  #carried = new Map<string, JobRef>();

  constructor(o: RecordSyncOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  /** Forget what was written (leadership lost): the next round lists the records again. */
  reset(): void {
    this.#known = undefined;
    this.#carried.clear();
  }

  /** One round. Throws when the records cannot be listed; a single record's failure is logged and retried next round. */
  async round(): Promise<RoundCounts> {
    const now = this.#now();
    const listed = this.#known === undefined || now >= this.#nextList;
    if (listed) {
      this.#known = await this.#list();
      this.#nextList = now + (this.#o.resyncMs ?? 600_000);
    }
    const known = this.#known!;
    const counts: RoundCounts = { listed, checked: 0, created: 0, patched: 0, deleted: 0 };
    const since = listed || this.#lastRound === 0 ? now - this.#o.retentionMs : this.#lastRound - OVERLAP_MS;
    const stored = await this.#o.jobs.storedSince(since, this.#o.scanMax ?? 5_000);
    this.#lastRound = now;
    const candidates = new Map<string, JobRef>(this.#carried);
    for (const j of stored) {
      const name = recordName(j.queue, j.id);
      const k = known.get(name);
      if (!k || !FINAL_STATES.has(k.jobState)) candidates.set(name, j);
    }
    for (const [name, k] of known) if (!FINAL_STATES.has(k.jobState)) candidates.set(name, k);
    const refs = [...candidates];
    const states = refs.length ? await this.#o.jobs.states(refs.map(([, r]) => r)) : [];
    counts.checked = refs.length;
    const moved = refs
      .map(([name, ref], i) => ({ name, ref, state: states[i] ?? 'gone' }))
      .filter((w) => known.get(w.name)?.jobState !== w.state && (w.state !== 'gone' || known.has(w.name)));
    const room = this.#o.writesMax ?? 250;
    // A storm's jobs beyond the room are written in the next rounds, whatever the index holds by then.
    this.#carried = new Map(moved.slice(room).map((w) => [w.name, w.ref]));
    await this.#inBatches(moved.slice(0, room), (w) =>
      // A failed write is tried again next round, also once the job is out of the index's window.
      this.#sync(w.name, w.ref, w.state, now, counts).catch((err: unknown) => {
        this.#carried.set(w.name, w.ref);
        throw err;
      }),
    );
    const expired = [...known].filter(([, k]) => FINAL_STATES.has(k.jobState) && k.since + this.#o.retentionMs <= now);
    await this.#inBatches(expired, async ([name]) => {
      await this.#o.records.remove(name);
      known.delete(name);
      counts.deleted += 1;
    });
    return counts;
  }

  async #inBatches<T>(items: readonly T[], write: (item: T) => Promise<void>): Promise<void> {
    const parallel = this.#o.parallel ?? 8;
    for (let i = 0; i < items.length; i += parallel) {
      await Promise.all(
        items
          .slice(i, i + parallel)
          .map((item) => write(item).catch((err: Error) => this.#o.log.warn({ err: err.message }, 'a VolumeRemediation write failed; tried again next round'))),
      );
    }
  }

  async #sync(name: string, ref: JobRef, state: JobStateName, now: number, counts: RoundCounts): Promise<void> {
    const known = this.#known!;
    if (state === 'gone') {
      const status = {
        phase: 'Unknown',
        jobState: 'gone',
        reason: 'job-gone',
        why: 'the job left the job store before it finished',
        finishedAt: new Date(now).toISOString(),
      };
      if (await this.#o.records.patchStatus(name, status)) {
        known.set(name, { ...ref, jobState: 'gone', since: now });
        counts.patched += 1;
      } else known.delete(name);
      return;
    }
    const read = await this.#o.jobs.read(ref.queue, ref.id);
    if (!read) return; // gone meanwhile: the next round sees it gone
    const since = read.job.finishedOn ?? read.job.timestamp;
    // A job that finished longer ago than the retention gets no record (the index still lists it).
    if (!known.has(name) && FINAL_STATES.has(state) && since + this.#o.retentionMs <= now) return;
    const record = recordOf(read.job, ref.queue, read.state, state, this.#o);
    if (!known.has(name)) {
      // The API server ignores a new object's status (the status subresource): it is patched next.
      const { status: _status, ...body } = record;
      if (await this.#o.records.create(body as unknown as Record<string, unknown>)) counts.created += 1;
    }
    if (await this.#o.records.patchStatus(name, statusPatch(record.status))) {
      known.set(name, { ...ref, jobState: state, since: FINAL_STATES.has(state) ? since : now });
      counts.patched += 1;
    } else known.delete(name);
  }

  /** The records in the API server, as far as the sync needs them. */
  async #list(): Promise<Map<string, Known>> {
    const selector = Object.entries(MANAGED_BY)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const out = new Map<string, Known>();
    for (const item of await this.#o.records.list(selector)) {
      const meta = obj(item['metadata']);
      const spec = obj(item['spec']);
      const status = obj(item['status']);
      const name = str(meta['name']);
      const queue = str(spec['queue']);
      const id = str(spec['jobId']);
      if (!name || !queue || !id || obj(meta['labels'])['app.kubernetes.io/managed-by'] !== MANAGED_BY['app.kubernetes.io/managed-by']) continue;
      const since = Date.parse(str(status['finishedAt']) ?? str(meta['creationTimestamp']) ?? '');
      out.set(name, { queue, id, jobState: str(status['jobState']) ?? '', since: Number.isNaN(since) ? this.#now() : since });
    }
    return out;
  }
}
