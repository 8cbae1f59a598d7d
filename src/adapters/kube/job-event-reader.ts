import type { EventsV1Event } from '@kubernetes/client-node';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import { REPORTING_CONTROLLER } from '../../core/catalogue/names.ts';
import { JOB_ANNOTATION, JOB_EVENT_REASONS, jobEventName, jobEventSubject, type EventSubject, type JobEventOutcome } from './job-events.ts';

// The Kubernetes Events a job wrote (src/adapters/kube/job-events.ts), for the console's incident page:
// one list call, in the namespace the Events were written to, narrowed by the API server to our
// own Events about the job's object (field selector on regarding and reportingController), then
// to this job's by its annotation (JOB_ANNOTATION), or by name for an Event written without one
// (an Event's name derives from the object, the outcome and the job id).
// Best effort with a deadline: when the API cannot be asked, the page says the Events are unknown,
// never "none".

interface JobEventView {
  name: string;
  reason: string;
  type: string;
  note: string;
  regarding: string;
  count: number;
  firstAt?: string;
  lastAt?: string;
}

export type JobEventsAnswer = { events: JobEventView[] } | { unknown: string };

/** What the reader asks of the API server: events.k8s.io/v1 list in one namespace (src/adapters/kube/rbac.ts: the receiver's `events.k8s.io/events list`). */
export interface EventLister {
  listNamespacedEvent(p: { namespace: string; fieldSelector?: string; limit?: number }): Promise<{ items: EventsV1Event[] }>;
}

const OUTCOMES = Object.keys(JOB_EVENT_REASONS) as JobEventOutcome[];
const DEADLINE_MS = 2_000;
/** More Events of ours about one object than a page would show. */
const LIST_LIMIT = 500;

const iso = (v: unknown): string | undefined => {
  if (v instanceof Date) return v.toISOString();
  return typeof v === 'string' ? v : undefined;
};

export class JobEventReader {
  readonly #api: EventLister;

  constructor(api: EventLister) {
    this.#api = api;
  }

  async eventsOf(jobId: string, job: RemediationJob): Promise<JobEventsAnswer> {
    const subject = jobEventSubject(job);
    if (!subject) return { events: [] };
    const namespace = subject.kind === 'Pod' ? (subject.namespace ?? 'default') : 'default';
    const names = new Set(OUTCOMES.map((outcome) => jobEventName({ jobId, outcome, regarding: subject })));
    const fieldSelector = `regarding.kind=${subject.kind},regarding.name=${subject.name},reportingController=${REPORTING_CONTROLLER}`;
    let timer: NodeJS.Timeout | undefined;
    try {
      const list = await Promise.race([
        this.#api.listNamespacedEvent({ namespace, fieldSelector, limit: LIST_LIMIT }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);
        }),
      ]);
      return {
        events: list.items
          .filter((e) => e.metadata?.annotations?.[JOB_ANNOTATION] === jobId || names.has(e.metadata?.name ?? ''))
          .map((e) => view(e, subject))
          .sort((a, b) => (a.firstAt ?? '').localeCompare(b.firstAt ?? '')),
      };
    } catch (err) {
      return { unknown: `the Events of ${subject.kind}/${subject.name} could not be listed: ${(err as Error).message}` };
    } finally {
      clearTimeout(timer);
    }
  }
}

function view(e: EventsV1Event, subject: EventSubject): JobEventView {
  const first = iso(e.eventTime) ?? iso(e.metadata?.creationTimestamp);
  const last = iso(e.series?.lastObservedTime) ?? first;
  return {
    name: e.metadata?.name ?? '',
    reason: e.reason ?? '',
    type: e.type ?? '',
    note: e.note ?? '',
    regarding: `${e.regarding?.kind ?? subject.kind}/${e.regarding?.namespace ? `${e.regarding.namespace}/` : ''}${e.regarding?.name ?? subject.name}`,
    count: e.series?.count ?? 1,
    ...(first ? { firstAt: first } : {}),
    ...(last ? { lastAt: last } : {}),
  };
}
