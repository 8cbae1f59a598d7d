import type { Enqueued } from '../../core/jobs/job-store.ts';
import type { IngestResult } from './ingest.ts';
import type { Ignored } from '../../core/signals/index.ts';
import { AlertmanagerPayload } from '../sources/alertmanager.ts';
import { topLevelMember } from './json-member.ts';
import { GenerationalMap } from '../../core/collections/generational-map.ts';

// An Alertmanager body whose alerts arrive again exactly as written (its retry after a timeout or
// a 503, a re-notification of a group that has not changed, the other Alertmanager of an HA pair
// with its own externalURL, a storm of copies) is answered from what the first copy was triaged
// to, without validating and triaging the alerts again.
//
// Why the answer is exact:
// - For Alertmanager, body -> jobs and ignored reasons is a pure function of the body's `alerts`
//   and the receiver's configuration (which does not change while it runs): the schema, the
//   source's signals (alertmanagerSignals reads nothing but the alerts) and the triage of a node
//   recovery with an alert identity use no lookups and no clock. The key is the `alerts` member's
//   text as written (json-member.ts: exactly what JSON.parse read it as); the same text is the
//   same alerts. The rest of the body is still validated on every hit (`envelopeValid`), so a
//   body the full path would refuse with 422 is refused. (Kubernetes Events and
//   node-problem-detector bodies can be triaged with cluster lookups that change over time, so
//   they are never answered from here.)
// - "deduplicated" is still the dispatcher's decision, per key, on every hit: a hit is used only
//   when every job of the body is a key the dispatcher would answer as stored from memory right
//   now (Dispatcher.allKnown, with its bounds on retention, operator deletions and reconnects).
//   Otherwise the body takes the full path, which is what it would have done anyway.
// So a hit answers what the full path would answer: the same jobs, all deduplicated, the same
// ignored reasons, in the same order.

/** An Alertmanager body's `alerts` as written, the key of its answer; undefined when not certain. */
const alertsText = (body: string): string | undefined => topLevelMember(body, 'alerts');

const Envelope = AlertmanagerPayload.omit({ alerts: true });

/** Whether everything but the alerts of a parsed body is what the Alertmanager schema accepts. */
export const envelopeValid = (body: unknown): boolean => Envelope.safeParse(body).success;

/** What a body was triaged to. Serialised on its first hit: most remembered answers are never used. */
class RepeatAnswer {
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
  /** Bodies longer than this (or than half of maxTotalChars) are not remembered (default 64 Ki characters). */
  maxBodyChars?: number;
  /**
   * All remembered bodies together stay under this (default 4 Mi characters): the newest half
   * always, older ones while there is room (GenerationalMap).
   */
  maxTotalChars?: number;
}

/** What `find` saw of a body. */
export interface Seen {
  /** The answer remembered for the body's alerts. */
  answer?: RepeatAnswer;
  /** The answer was made from this very body, byte for byte: the rest of it needs no validating. */
  sameBody: boolean;
  /** The body's alerts as written, when they were looked at (`alertsText`); for `remember`. */
  alerts?: string | undefined;
}

interface Entry {
  body: string;
  answer: RepeatAnswer;
}

/**
 * Answers by the alerts of the body that made them. Each entry holds that body's text (the alerts
 * key is a slice of it), so the bound counts bodies, and a body that comes again byte for byte
 * is told apart (`sameBody`) without validating it again.
 */
export class RepeatAnswers {
  private readonly byAlerts: GenerationalMap<string, Entry>;
  private readonly maxBodyChars: number;

  constructor(opts: RepeatAnswersOptions = {}) {
    this.maxBodyChars = opts.maxBodyChars ?? 64 * 1024;
    this.byAlerts = new GenerationalMap(Math.max(0, opts.maxTotalChars ?? 4 * 1024 * 1024), (_, e) => e.body.length);
  }

  get size(): number {
    return this.byAlerts.size;
  }

  find(body: string): Seen {
    if (body.length > this.maxBodyChars) return { sameBody: false };
    const alerts = alertsText(body);
    const entry = alerts !== undefined ? this.byAlerts.get(alerts) : undefined;
    return entry ? { answer: entry.answer, sameBody: entry.body === body, alerts } : { sameBody: false, alerts };
  }

  /**
   * Remembers what `body` (with these alerts, from `find`) was triaged to: the result's arrays,
   * not copies (nothing changes them).
   */
  remember(body: string, alerts: string | undefined, result: IngestResult): void {
    if (alerts === undefined || body.length > this.maxBodyChars || result.accepted.length === 0 || this.byAlerts.has(alerts)) return;
    // A job held for an older agent (ingest/agent-gate.ts) depends on the fleet, not on the body: its next copy asks again.
    if (result.ignored.some((i) => i.reason === 'agent-too-old')) return;
    this.byAlerts.set(alerts, { body, answer: new RepeatAnswer(result.accepted, result.ignored) });
  }

  clear(): void {
    this.byAlerts.clear();
  }
}
