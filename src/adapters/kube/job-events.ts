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
export type JobEventOutcome = 'started' | 'refused' | 'succeeded' | 'failed' | 'no-agent';

export const JOB_EVENT_REASONS: Readonly<Record<JobEventOutcome, { reason: string; type: 'Normal' | 'Warning' }>> = {
  started: { reason: 'RemediationStarted', type: 'Normal' },
  refused: { reason: 'RemediationRefused', type: 'Warning' },
  succeeded: { reason: 'RemediationSucceeded', type: 'Normal' },
  failed: { reason: 'RemediationFailed', type: 'Warning' },
  'no-agent': { reason: 'NoAgent', type: 'Warning' },
};

/** The object a job's Events belong on: the node, the Local PV, or the pod that cannot mount. */
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
  /** What happened, for humans; the job id and mode are appended. */
  message: string;
  mode?: 'dry-run' | 'enforce';
}

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
}

export function jobEventName(input: Pick<JobEventInput, 'jobId' | 'outcome' | 'regarding'>): string {
  return eventObjectName(input.regarding, [input.outcome, input.jobId]);
}

export class JobEventRecorder {
  private readonly writer: EventWriter;
  private readonly log: Logger | undefined;

  constructor(o: JobEventRecorderOptions) {
    this.writer = new EventWriter({ events: o.events, instance: o.instance ?? hostname(), now: o.now ?? (() => new Date()) });
    this.log = o.log;
  }

  async recordJobEvent(input: JobEventInput): Promise<RecordedJobEvent> {
    const namespace = eventNamespace(input.regarding);
    const name = jobEventName(input);
    const { reason, type } = JOB_EVENT_REASONS[input.outcome];
    const note = `${input.message} (job ${input.jobId}, ${input.runbook}${input.mode ? `, ${input.mode}` : ''})`;
    try {
      return await this.writer.write({ name, regarding: input.regarding, reason, type, action: input.runbook, note });
    } catch (err) {
      const error = (err as Error).message;
      this.log?.warn({ event: `${namespace}/${name}`, err: error }, 'could not record a Kubernetes Event');
      return { namespace, name, result: 'failed', count: this.writer.countOf(namespace, name), error };
    }
  }
}
