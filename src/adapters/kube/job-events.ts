import { createHash } from '../../core/node-crypto.ts';
import { hostname } from 'node:os';
import type { EventsV1Event } from '@kubernetes/client-node';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { EventsApi } from './api/apis.ts';
import type { Logger } from '../observability/logger.ts';
import { REPORTING_CONTROLLER } from '../../core/catalogue/names.ts';
import { isNotFound } from './api/not-found.ts';

// Job results as Kubernetes Events (events.k8s.io/v1) on the object they concern, so
// `kubectl describe node worker-1` shows what volume-medic did there. One Event per
// (object, outcome, job): a repeat (a retry refused again, the same success reported twice) bumps
// that Event's series count instead of adding objects, including across restarts and replicas,
// because the Event's name is derived from those three. Recording is best effort: a failure is
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

export interface EventSubject {
  kind: 'Node' | 'Pod' | 'PersistentVolume';
  name: string;
  /** Pods only; Node and PV Events go to `default`, as the kubelet's do. */
  namespace?: string;
  uid?: string;
}

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

const NOTE_MAX = 1024;

/** MicroTime as the API server parses it: RFC 3339 with exactly six fractional digits. */
const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export function jobEventName(input: Pick<JobEventInput, 'jobId' | 'outcome' | 'regarding'>): string {
  const r = input.regarding;
  const hash = createHash('sha256')
    .update(JSON.stringify([r.kind, r.namespace ?? '', r.name, input.outcome, input.jobId]))
    .digest('hex')
    .slice(0, 16);
  return `${r.name.slice(0, 200)}.vm-${hash}`;
}

export class JobEventRecorder {
  private readonly api: EventsApi;
  private readonly instance: string;
  private readonly now: () => Date;
  private readonly log: Logger | undefined;
  /** Series counts this process wrote, by namespace/name; saves a read before each repeat. */
  private readonly counts = new Map<string, number>();

  constructor(o: JobEventRecorderOptions) {
    this.api = o.events;
    this.instance = (o.instance ?? hostname()).slice(0, 128);
    this.now = o.now ?? (() => new Date());
    this.log = o.log;
  }

  async recordJobEvent(input: JobEventInput): Promise<RecordedJobEvent> {
    const namespace = input.regarding.kind === 'Pod' ? (input.regarding.namespace ?? 'default') : 'default';
    const name = jobEventName(input);
    const key = `${namespace}/${name}`;
    const { reason, type } = JOB_EVENT_REASONS[input.outcome];
    const note = `${input.message} (job ${input.jobId}, ${input.runbook}${input.mode ? `, ${input.mode}` : ''})`.slice(0, NOTE_MAX);
    const at = microTime(this.now());
    try {
      const known = this.counts.get(key);
      if (known !== undefined) {
        const count = await this.bump(namespace, name, known, note, at);
        if (count !== undefined) return { namespace, name, result: 'updated', count };
      }
      const body: EventsV1Event = {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': REPORTING_CONTROLLER } },
        // The generated model types MicroTime as Date but passes it through unserialised; a Date
        // would go out with millisecond precision, which the API server's MicroTime refuses.
        eventTime: at as unknown as Date,
        reportingController: REPORTING_CONTROLLER,
        reportingInstance: this.instance,
        action: input.runbook.slice(0, 128),
        reason,
        type,
        note,
        regarding: {
          apiVersion: 'v1',
          kind: input.regarding.kind,
          name: input.regarding.name,
          ...(input.regarding.kind === 'Pod' ? { namespace } : {}),
          ...(input.regarding.uid ? { uid: input.regarding.uid } : {}),
        },
      };
      try {
        await this.api.createNamespacedEvent({ namespace, body });
        this.counts.set(key, 1);
        return { namespace, name, result: 'created', count: 1 };
      } catch (err) {
        if ((err as { code?: number }).code !== 409) throw err;
        // Written before by another replica or an earlier run of this process: continue its series.
        const existing = await this.api.readNamespacedEvent({ namespace, name });
        const count = await this.bump(namespace, name, existing.series?.count ?? 1, note, at);
        if (count === undefined) throw new Error(`event ${key} vanished while being updated`);
        return { namespace, name, result: 'updated', count };
      }
    } catch (err) {
      const error = (err as Error).message;
      this.log?.warn({ event: key, err: error }, 'could not record a Kubernetes Event');
      return { namespace, name, result: 'failed', count: this.counts.get(key) ?? 0, error };
    }
  }

  /** series.count + 1; undefined when the Event no longer exists (Events expire, 1 h by default). */
  private async bump(namespace: string, name: string, count: number, note: string, at: string): Promise<number | undefined> {
    const next = count + 1;
    try {
      await this.api.patchNamespacedEvent({
        namespace,
        name,
        body: [
          { op: 'add', path: '/series', value: { count: next, lastObservedTime: at } },
          { op: 'replace', path: '/note', value: note },
        ],
      });
    } catch (err) {
      if (isNotFound(err)) {
        this.counts.delete(`${namespace}/${name}`);
        return undefined;
      }
      throw err;
    }
    this.counts.set(`${namespace}/${name}`, next);
    return next;
  }
}
