import type { JobStore } from '../../core/jobs/job-store.ts';
import { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { JobEventReader, JobEventsAnswer } from '../../adapters/kube/job-event-reader.ts';
import type { OperatorActions } from '../actions/operator-actions.ts';
import { ParkedJob, parseJson, type ApprovalRecord, type AuditEntry, type PauseRecord } from '../../core/controls/records.ts';
import { controlKeys } from '../../core/controls/redis-keys.ts';
import { CLUSTER_QUEUE } from '../../core/catalogue/queues.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { nextRetryKey, toIncident, type Incident } from './incident.ts';
import { recordName } from './record-name.ts';

// One incident with everything its page shows, for the console's page and the API the CLI's
// `show` reads (GET /v1/jobs/:id/incident): one loader, so both show the same evidence, planned
// argv, output and audit trail.

export interface IncidentDetail {
  incident: Incident;
  log: string[];
  /** The job's approval request, when it belongs to this job (not an earlier job with the same key). */
  approval?: ApprovalRecord;
  /** Why the request is not its worker's (its seal does not hold): shown, and nothing to decide. */
  approvalUnverified?: string;
  /** Audit entries about this job (and its steps), oldest first; `verified` false: its writer's seal does not hold. */
  audit: Array<AuditEntry & { verified?: boolean; unverifiedWhy?: string; seq?: number }>;
  /** The pause on the job's node: null when not paused; absent for a cluster job. */
  nodePause?: PauseRecord | null;
  /** The retry made of this failed job, if any. */
  retriedAs?: { id: string; state: string };
  /** The Kubernetes Events the job wrote, or why they are unknown. */
  events: JobEventsAnswer;
  /** The job's VolumeRemediation (src/control/records/), where the receiver keeps records. */
  record?: { name: string; namespace: string };
}

const unverifiedOf = (c: OperatorActions, a: ApprovalRecord): { approvalUnverified?: string } => {
  const why = c.requestUnverified(a);
  return why ? { approvalUnverified: why } : {};
};

export interface DetailDeps {
  redis: RedisConnection;
  prefix: string;
  jobs: JobStore;
  controls: OperatorActions;
  /** The console's index: where a job was stored, found without a look at every queue. */
  incidents?: { locate(id: string): Promise<{ queue: string } | undefined> };
  /** Reads the job's Kubernetes Events back; without cluster access they are unknown. */
  events?: JobEventReader;
  /** Where the jobs' VolumeRemediation records are (RECORDS on, with cluster access). */
  recordsNamespace?: string;
}

/** Audit entries read to find a job's (the trail keeps the last 1000). */
const AUDIT_READ = 1000;

/**
 * Where the console's records put job `id`: the index, a parked job's record, and the cluster
 * queue (few jobs); JobStore.find then looks on every other known queue.
 */
export function likelyQueues(deps: Pick<DetailDeps, 'redis' | 'prefix' | 'incidents'>): (id: string) => Promise<(string | undefined)[]> {
  return async (id) => {
    const [located, parked] = await Promise.all([
      deps.incidents?.locate(id).catch(() => undefined),
      deps.redis.hget(controlKeys(deps.prefix).legacyParked, id).catch(() => null),
    ]);
    return [located?.queue, parseJson(ParkedJob, parked)?.queue, CLUSTER_QUEUE];
  };
}

export async function loadIncident(deps: DetailDeps, id: string): Promise<IncidentDetail | undefined> {
  const found = await deps.jobs.find(id, likelyQueues(deps));
  if (!found) return undefined;
  const { queue: name, job, state } = found;
  const incident = toIncident(job, name, state);
  const node = incident.node !== '(cluster)' ? incident.node : undefined;
  const retryKey = state === 'failed' ? nextRetryKey(incident) : undefined;
  const parsed = RemediationJob.safeParse(job.data);
  const [logs, approval, audit, pauses, retried, events] = await Promise.all([
    deps.jobs.logs(name, id, 200),
    deps.controls.approval(id, name),
    deps.controls.audit(AUDIT_READ),
    node ? deps.controls.store.pauses() : Promise.resolve(undefined),
    retryKey ? deps.jobs.state(name, retryKey) : Promise.resolve('unknown' as const),
    !parsed.success
      ? Promise.resolve({ unknown: 'the job data does not match the catalogue: which object its Events are on is not known' })
      : deps.events
        ? deps.events.eventsOf(id, parsed.data)
        : Promise.resolve({ unknown: 'this receiver has no Kubernetes access to read Events with' }),
  ]);
  return {
    incident,
    log: logs.lines,
    ...(approval && approval.jobCreatedAt === job.timestamp ? { approval, ...unverifiedOf(deps.controls, approval) } : {}),
    audit: audit.filter((e) => e.target === `job/${id}` || e.target.startsWith(`job/${id}/`)).reverse(),
    ...(node ? { nodePause: pauses?.nodes[node] ?? null } : {}),
    ...(retryKey && retried !== 'unknown' ? { retriedAs: { id: retryKey, state: retried } } : {}),
    events,
    ...(deps.recordsNamespace ? { record: { name: recordName(name, id), namespace: deps.recordsNamespace } } : {}),
  };
}
