import { hostname } from 'node:os';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { EventsApi } from './api/apis.ts';
import type { Logger } from '../observability/logger.ts';
import { type EventSubject, EventWriter, eventNamespace, eventObjectName } from './event-writer.ts';

export type { EventSubject } from './event-writer.ts';

// Job results as Kubernetes Events (events.k8s.io/v1) on the object they concern, so
// `kubectl describe node worker-1` shows what volume-medic did there. One Event per
// (object, outcome, job): a repeat (a retry refused again, the same success reported twice) bumps
// that Event's series count instead of adding objects, including across restarts and replicas,
// because the Event's name is derived from those three (event-writer.ts writes it). Recording is best effort: a failure is
// logged and returned, never thrown into the runbook.

// `no-agent`: the job waits on a node queue that no node agent serves (workers/cluster-worker/no-agent-watch.ts).
// `awaiting-approval`: parked until an operator approves its high-risk step; `parked`: by a pause,
// a breaker, evidence still maturing or another tool busy with the node; `planned`: a dry-run's
// plan, the steps enforce would take.
export type JobEventOutcome = 'started' | 'refused' | 'succeeded' | 'failed' | 'no-agent' | 'awaiting-approval' | 'parked' | 'planned';

export const JOB_EVENT_REASONS: Readonly<Record<JobEventOutcome, { reason: string; type: 'Normal' | 'Warning' }>> = {
  started: { reason: 'RemediationStarted', type: 'Normal' },
  refused: { reason: 'RemediationRefused', type: 'Warning' },
  succeeded: { reason: 'RemediationSucceeded', type: 'Normal' },
  failed: { reason: 'RemediationFailed', type: 'Warning' },
  'no-agent': { reason: 'NoAgent', type: 'Warning' },
  // Someone must act: a Warning, as the job does nothing until then.
  'awaiting-approval': { reason: 'RemediationAwaitingApproval', type: 'Warning' },
  parked: { reason: 'RemediationParked', type: 'Normal' },
  planned: { reason: 'RemediationPlanned', type: 'Normal' },
};

/**
 * The object a job's Events belong on: the node, the Local PV, or the pod that cannot mount. The
 * claim of a Local PV or of an RBD image is a second subject (the recorder's `claimOf`): an
 * application owner looks at their PVC, not at the PV or the node.
 */
export function jobEventSubject(job: RemediationJob): EventSubject | undefined {
  switch (job.runbook) {
    case 'residual-multipath-cleanup':
    case 'rbd-unmap':
    case 'orphaned-pod-volumes':
    case 'readonly-filesystem-recovery':
    case 'out-of-service-taint-release':
      return { kind: 'Node', name: job.target.node };
    case 'local-pv-placeholder':
      return { kind: 'PersistentVolume', name: job.target.pv };
    case 'rbd-stale-mapping':
      return job.target.pod ? { kind: 'Pod', namespace: job.target.pod.namespace, name: job.target.pod.name } : undefined;
    default: {
      const never: never = job;
      return never;
    }
  }
}

export interface JobEventInput {
  jobId: string;
  runbook: string;
  outcome: JobEventOutcome;
  regarding: EventSubject;
  /**
   * What happened, for humans; the job id and mode are appended. An Event's note cannot change
   * (event-writer.ts): worded to hold for every repeat of (subject, outcome, job, variant).
   */
  message: string;
  mode?: 'dry-run' | 'enforce';
  /** Tells apart Events of one outcome that say different things (a job parked by a pause, then by a breaker). */
  variant?: string;
}

/** The runbooks whose incident has a claim an application owner reads: a Local PV's, an RBD image's. */
const CLAIM_RUNBOOKS: ReadonlySet<string> = new Set(['local-pv-placeholder', 'rbd-stale-mapping']);

/** Finds the PVC a job's volume is bound to (undefined: none, or not known); may throw (logged, not retried). */
export type ClaimOf = (job: RemediationJob) => Promise<EventSubject | undefined>;

export interface RecordedJobEvent {
  namespace: string;
  name: string;
  result: 'created' | 'updated' | 'failed';
  count: number;
  error?: string;
}

export interface JobEventRecorderOptions {
  events: EventsApi;
  /** reportingInstance: the pod or host name. Default os.hostname(). */
  instance?: string;
  now?: () => Date;
  log?: Logger;
  /** The claim a job's volume is bound to, for CLAIM_RUNBOOKS: its Events go there too. */
  claimOf?: ClaimOf;
}

/** The annotation naming the job an Event is about: the console finds a job's Events by it (a wait's name has a variant in it). */
export const JOB_ANNOTATION = 'volume-medic.io/job';

export function jobEventName(input: Pick<JobEventInput, 'jobId' | 'outcome' | 'regarding' | 'variant'>): string {
  return eventObjectName(input.regarding, [input.outcome, input.jobId, ...(input.variant ? [input.variant] : [])]);
}

/** Claims remembered per job: looked up once, not on each of a job's Events. */
const CLAIMS_KEPT = 1000;

export class JobEventRecorder {
  private readonly writer: EventWriter;
  private readonly log: Logger | undefined;
  private readonly claimOf: ClaimOf | undefined;
  private readonly claims = new Map<string, Promise<EventSubject | undefined>>();

  constructor(o: JobEventRecorderOptions) {
    this.writer = new EventWriter({ events: o.events, instance: o.instance ?? hostname(), now: o.now ?? (() => new Date()) });
    this.log = o.log;
    this.claimOf = o.claimOf;
  }

  /**
   * The job's Event on its subject and, for CLAIM_RUNBOOKS, the same on the claim (when `job` is
   * given and its claim is found). Returns what happened on the subject.
   */
  async recordJobEvent(input: JobEventInput, job?: RemediationJob): Promise<RecordedJobEvent> {
    const claim = job ? await this.claimFor(input.jobId, job) : undefined;
    const [onSubject] = await Promise.all([this.recordOn(input), ...(claim ? [this.recordOn({ ...input, regarding: claim })] : [])]);
    return onSubject as RecordedJobEvent;
  }

  private claimFor(jobId: string, job: RemediationJob): Promise<EventSubject | undefined> {
    if (!this.claimOf || !CLAIM_RUNBOOKS.has(job.runbook)) return Promise.resolve(undefined);
    let found = this.claims.get(jobId);
    if (!found) {
      found = this.claimOf(job).catch((err: Error) => {
        this.log?.warn({ jobId, err: err.message }, "could not find the job's claim: its Events go on its subject only");
        return undefined;
      });
      if (this.claims.size >= CLAIMS_KEPT) this.claims.delete(this.claims.keys().next().value as string);
      this.claims.set(jobId, found);
    }
    return found;
  }

  private async recordOn(input: JobEventInput): Promise<RecordedJobEvent> {
    const namespace = eventNamespace(input.regarding);
    const name = jobEventName(input);
    const { reason, type } = JOB_EVENT_REASONS[input.outcome];
    const note = `${input.message} (job ${input.jobId}, ${input.runbook}${input.mode ? `, ${input.mode}` : ''})`;
    try {
      return await this.writer.write({
        name,
        regarding: input.regarding,
        reason,
        type,
        action: input.runbook,
        note,
        annotations: { [JOB_ANNOTATION]: input.jobId },
      });
    } catch (err) {
      const error = (err as Error).message;
      this.log?.warn({ event: `${namespace}/${name}`, err: error }, 'could not record a Kubernetes Event');
      return { namespace, name, result: 'failed', count: this.writer.countOf(namespace, name), error };
    }
  }
}
