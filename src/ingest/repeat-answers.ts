import type { Enqueued } from '../queues/dispatcher.ts';
import type { IngestResult } from './ingest.ts';
import type { Ignored } from '../signals/index.ts';

// An Alertmanager body that arrives again byte for byte (its retry after a timeout or a 503, a
// re-notification of a group that has not changed, a storm of copies) is answered from what
// the first copy was triaged to, without parsing, validating and triaging it again (issue 8).
//
// Why the answer is exact:
// - For Alertmanager, body -> jobs and ignored reasons is a pure function of the body and the
//   receiver's configuration (which does not change while it runs): the schema, the source's
//   signals and the triage of a node recovery with an alert identity use no lookups and no clock.
//   (Kubernetes Events and node-problem-detector bodies can be triaged with cluster lookups that
//   change over time, so they are never answered from here.)
// - "deduplicated" is still the dispatcher's decision, per key, on every hit: a hit is used only
//   when every job of the body is a key the dispatcher would answer as stored from memory right
//   now (Dispatcher.allKnown, with its bounds on retention, operator deletions and reconnects).
//   Otherwise the body takes the full path, which is what it would have done anyway.
// So a hit answers what the full path would answer: the same jobs, all deduplicated, the same
// ignored reasons, in the same order.

/** What a body was triaged to. Serialised on its first hit: most remembered bodies never repeat. */
export class RepeatAnswer {
  /** The jobs of the body, as first answered (all are deduplicated on a repeat). */
  readonly jobs: readonly Enqueued[];
  /** Counted again on each hit, as the full path would. */
  readonly ignored: readonly Ignored[];
  private serialised: string | undefined;

  constructor(jobs: readonly Enqueued[], ignored: readonly Ignored[]) {
    this.jobs = jobs;
    this.ignored = ignored;
  }

  /** The 202 body: the jobs (all deduplicated) and the ignored reasons. */
  get text(): string {
    this.serialised ??= JSON.stringify({ accepted: this.jobs.map((a) => ({ ...a, deduplicated: true })), ignored: this.ignored });
    return this.serialised;
  }
}

export interface RepeatAnswersOptions {
  /** Bodies larger than this are not remembered (default 64 KiB). */
  maxBodyChars?: number;
  /** All remembered bodies together stay under this (default 4 Mi characters); oldest go first. */
  maxTotalChars?: number;
}

export class RepeatAnswers {
  private readonly answers = new Map<string, RepeatAnswer>();
  private totalChars = 0;
  private readonly maxBodyChars: number;
  private readonly maxTotalChars: number;

  constructor(opts: RepeatAnswersOptions = {}) {
    this.maxBodyChars = opts.maxBodyChars ?? 64 * 1024;
    this.maxTotalChars = opts.maxTotalChars ?? 4 * 1024 * 1024;
  }

  get size(): number {
    return this.answers.size;
  }

  get(body: string): RepeatAnswer | undefined {
    return body.length > this.maxBodyChars ? undefined : this.answers.get(body);
  }

  /** Remembers what `body` was triaged to (the result's arrays, not copies: nothing changes them). */
  remember(body: string, result: IngestResult): void {
    if (body.length > this.maxBodyChars || result.accepted.length === 0 || this.answers.has(body)) return;
    this.answers.set(body, new RepeatAnswer(result.accepted, result.ignored));
    this.totalChars += body.length;
    while (this.totalChars > this.maxTotalChars) {
      const oldest = this.answers.keys().next();
      if (oldest.done) break;
      this.answers.delete(oldest.value);
      this.totalChars -= oldest.value.length;
    }
  }

  clear(): void {
    this.answers.clear();
    this.totalChars = 0;
  }
}
