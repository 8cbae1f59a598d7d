import type { StoredJob } from '../../core/jobs/job-store.ts';
import type { JobStateName } from '../../adapters/jobstore/job-states.ts';
import { consoleState, toIncident, type Incident } from '../console/incident.ts';
import { recordName } from '../console/record-name.ts';

// A job as a VolumeRemediation object (deploy/charts/volume-medic/templates/volume-remediation-crd.yaml
// is its schema): the spec is the job's identity (written once, at create), the status what the
// console says of it now. Built from the same reading of the job as the console's (toIncident),
// so `kubectl get volumeremediations` and the console agree. Every string a job carries is
// bounded here to the schema's maxLength: a record that the API server refuses is no record.

export const RECORD_GROUP = 'volume-medic.io';
export const RECORD_VERSION = 'v1alpha1';
export const RECORD_PLURAL = 'volumeremediations';
const RECORD_KIND = 'VolumeRemediation';
/** The label every record carries; the sync lists records by it. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'volume-medic' } as const;

/** The record's phase: the console's state, a finished job's by its outcome. */
export const PHASES = ['Waiting', 'Parked', 'Running', 'Succeeded', 'Failed', 'Refused', 'Planned', 'Unknown'] as const;
type Phase = (typeof PHASES)[number];

/** What the sync's scan says of a job (job-states.ts), gone aside: what a record's status.jobState holds. */
export type ScanState = Exclude<JobStateName, 'gone'>;
/** The scan states a job does not leave: its record's status is final. */
export const FINAL_STATES: ReadonlySet<string> = new Set(['completed', 'failed', 'gone']);

interface RecordSpec {
  jobId: string;
  queue: string;
  runbook: string;
  node?: string;
  /** The job's target, one line (`key=value, ...`). */
  target?: string;
  createdAt: string;
}

export interface RecordStatus {
  phase: Phase;
  /** The job store's state when the record was last written (the sync compares it, not the phase). */
  jobState: JobStateName;
  mode?: string;
  outcome?: string;
  summary?: string;
  /** Why it waits (a parked job): the engine's reason and its words. */
  reason?: string;
  why?: string;
  attempts: number;
  startedAt?: string;
  finishedAt?: string;
  /** The job's page in the console (CONSOLE_URL), when one is configured. */
  consoleURL?: string;
}

export interface VolumeRemediation {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: RecordSpec;
  status: RecordStatus;
}

export const LIMITS = { summary: 1024, why: 1024, target: 512, reason: 128, word: 63 } as const;
const cut = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
// A label value: <= 63 characters, alphanumeric at both ends, `-_.` inside.
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const label = (v: string | undefined): string | undefined => (v !== undefined && v.length <= 63 && LABEL_VALUE.test(v) ? v : undefined);

/** A finished job's phase, by its result's outcome (src/core/catalogue/result.ts, and what the engine may add). */
function outcomePhase(i: Incident): Phase {
  switch (i.outcome) {
    case 'succeeded':
    case 'nothing-to-do':
      return 'Succeeded';
    case 'planned':
      return 'Planned';
    case 'refused':
      return 'Refused';
    case 'failed':
    case 'not-implemented':
      return 'Failed';
    default:
      // A dry-run that would have waited (or parked, or asked for approval) only planned.
      return i.mode === 'dry-run' ? 'Planned' : 'Unknown';
  }
}

function phaseOf(i: Incident): Phase {
  switch (consoleState(i)) {
    case 'parked':
      return 'Parked';
    case 'active':
      return 'Running';
    case 'completed':
      return outcomePhase(i);
    case 'failed':
      return i.outcome === 'refused' ? 'Refused' : 'Failed';
    default:
      // waiting, delayed (a retry's backoff), prioritized, paused.
      return 'Waiting';
  }
}

/** `key=value, ...` of a target's scalar fields, one level deep. */
export function targetLine(t: unknown): string | undefined {
  if (t === null || t === undefined) return undefined;
  if (typeof t !== 'object') return cut(String(t), LIMITS.target);
  const parts = Object.entries(t as Record<string, unknown>)
    .filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v))
    .map(([k, v]) => `${k}=${String(v)}`);
  return parts.length ? cut(parts.join(', '), LIMITS.target) : undefined;
}

export interface RecordContext {
  namespace: string;
  /** The console's external URL (CONSOLE_URL), without a trailing slash. */
  consoleUrl?: string | undefined;
}

const iso = (ms: number | undefined): string | undefined => (ms ? new Date(ms).toISOString() : undefined);

/** The status of a job read as `state` (the store's) and scanned as `scanned`. */
function statusOf(job: StoredJob, i: Incident, scanned: ScanState, consoleUrl: string | undefined): RecordStatus {
  const startedAt = iso(job.processedOn);
  const finishedAt = iso(job.finishedOn);
  const summary = i.summary ?? i.failedReason;
  return {
    phase: phaseOf(i),
    jobState: scanned,
    ...(i.mode ? { mode: cut(i.mode, LIMITS.word) } : {}),
    ...(i.outcome ? { outcome: cut(i.outcome, LIMITS.word) } : {}),
    ...(summary ? { summary: cut(summary, LIMITS.summary) } : {}),
    ...(i.waiting ? { reason: cut(i.waiting.reason, LIMITS.reason), why: cut(i.waiting.why, LIMITS.why) } : {}),
    attempts: Math.max(0, Math.trunc(job.attemptsMade)),
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt && FINAL_STATES.has(scanned) ? { finishedAt } : {}),
    ...(consoleUrl ? { consoleURL: `${consoleUrl}/ui/jobs/${encodeURIComponent(job.id)}` } : {}),
  };
}

/** The record of `job` on `queue`, scanned in state `scanned` and read as `state`. */
export function recordOf(job: StoredJob, queue: string, state: string, scanned: ScanState, c: RecordContext): VolumeRemediation {
  const i = toIncident(job, queue, state);
  const node = i.node !== '(cluster)' ? i.node : undefined;
  const target = targetLine(i.target);
  const labels: Record<string, string> = { ...MANAGED_BY, 'volume-medic.io/runbook': label(i.runbook) ?? 'unknown' };
  const nodeLabel = label(node);
  if (nodeLabel) labels['volume-medic.io/node'] = nodeLabel;
  return {
    apiVersion: `${RECORD_GROUP}/${RECORD_VERSION}`,
    kind: RECORD_KIND,
    metadata: { name: recordName(queue, job.id), namespace: c.namespace, labels },
    spec: {
      jobId: job.id,
      queue,
      runbook: cut(i.runbook, LIMITS.word),
      ...(node ? { node } : {}),
      ...(target ? { target } : {}),
      createdAt: new Date(job.timestamp).toISOString(),
    },
    status: statusOf(job, i, scanned, c.consoleUrl),
  };
}
