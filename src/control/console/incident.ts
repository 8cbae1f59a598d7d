import type { StoredJob } from '../../core/jobs/job-store.ts';
import { RemediationJob } from '../../core/catalogue/jobs.ts';
import { nodeOfStoredJob } from '../../core/catalogue/queues.ts';

// One incident as the console shows it, read from a BullMQ job: what started it (the signal's
// evidence), where, the plan with every step's status, evidence and argv, refusals, and why it
// waits. Everything read back from Redis is untrusted: parsed, or read field by field with type
// checks, never assumed (a job written by an older version still shows).

interface StepEvidenceView {
  claim: string;
  source: string;
  observedAt?: string;
  status: string;
  detail?: string;
}

interface CommandView {
  argv: string[];
  exitCode: number | null;
  timedOut: boolean;
  durationMs?: number;
  stdout: string;
  stderr: string;
}

export interface IncidentStep {
  id: string;
  description: string;
  destructive: boolean;
  /** done, skipped-already-done, would-run, failed; `planned` for a step not run yet. */
  status: string;
  risk?: string;
  error?: string;
  waitsFor?: string;
  evidence: StepEvidenceView[];
  /** What ran (with output). */
  commands: CommandView[];
  /** What would run, for a step not run yet (workers/engine/planned-commands.ts). */
  plannedArgv?: string[][];
  plannedNote?: string;
}

interface SignalView {
  source: string;
  summary: string;
  raw: unknown;
}

export interface Incident {
  id: string;
  queue: string;
  /** A node queue's own node whatever the record says, else the node the job concerns, else `(cluster)`. */
  node: string;
  /** The node the job's record names when that is not its queue's (src/core/catalogue/queues.ts nodeOfStoredJob). */
  recordNames?: string;
  runbook: string;
  state: string;
  createdAt: string;
  finishedAt?: string;
  attemptsMade: number;
  mode?: string;
  modeWhy?: string;
  outcome?: string;
  summary?: string;
  failedReason?: string;
  refusals: string[];
  steps: IncidentStep[];
  waiting?: { reason: string; why: string; since?: string };
  signals: SignalView[];
  target?: unknown;
  ranOn?: string;
  /** An operator's retry (src/control/actions/job-retry.ts): the line's first job and which retry this is. */
  retry?: { of: string; n: number };
  valid: boolean;
}

/** The job a retry was made from: the line's first job, or the retry before it. */
export const retriedFrom = (r: { of: string; n: number }): string => (r.n === 1 ? r.of : `${r.of}.r${r.n - 1}`);
/** The key the next retry of a job gets. */
export const nextRetryKey = (i: Pick<Incident, 'id' | 'retry'>): string => `${i.retry?.of ?? i.id}.r${(i.retry?.n ?? 0) + 1}`;

type Loose = Record<string, unknown> | undefined;
const obj = (v: unknown): Loose => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strings = (v: unknown): string[] => arr(v).filter((x): x is string => typeof x === 'string');

function evidenceOf(v: unknown): StepEvidenceView[] {
  return arr(v)
    .map(obj)
    .filter((e): e is Record<string, unknown> => e !== undefined)
    .map((e) => ({
      claim: str(e['claim']) ?? '?',
      source: str(e['source']) ?? '?',
      status: str(e['status']) ?? '?',
      ...(str(e['observedAt']) ? { observedAt: str(e['observedAt']) as string } : {}),
      ...(str(e['detail']) ? { detail: str(e['detail']) as string } : {}),
    }));
}

function commandsOf(v: unknown): CommandView[] {
  return arr(v)
    .map(obj)
    .filter((c): c is Record<string, unknown> => c !== undefined)
    .map((c) => ({
      argv: strings(c['argv']),
      exitCode: typeof c['exitCode'] === 'number' ? c['exitCode'] : null,
      timedOut: c['timedOut'] === true,
      ...(typeof c['durationMs'] === 'number' ? { durationMs: c['durationMs'] } : {}),
      stdout: str(c['stdout']) ?? '',
      stderr: str(c['stderr']) ?? '',
    }));
}

function stepOf(v: unknown, fallbackStatus: string): IncidentStep | undefined {
  const s = obj(v);
  const id = str(s?.['id']);
  if (!s || !id) return undefined;
  const planned = Array.isArray(s['plannedArgv']) ? arr(s['plannedArgv']).map(strings) : undefined;
  return {
    id,
    description: str(s['description']) ?? '',
    destructive: s['destructive'] === true,
    status: str(s['status']) ?? fallbackStatus,
    ...(s['risk'] === 'high' || s['highRisk'] === true ? { risk: 'high' } : {}),
    ...(str(s['error']) ? { error: str(s['error']) as string } : {}),
    ...(str(s['waitsFor']) ? { waitsFor: str(s['waitsFor']) as string } : {}),
    evidence: evidenceOf(s['evidence']),
    commands: commandsOf(s['commands']),
    ...(planned ? { plannedArgv: planned } : {}),
    ...(str(s['plannedNote']) ? { plannedNote: str(s['plannedNote']) as string } : {}),
  };
}

/** The incident of a job in `state` on `queue`. */
export function toIncident(job: StoredJob, queue: string, state: string): Incident {
  const parsed = RemediationJob.safeParse(job.data);
  const progress = obj(job.progress);
  const parked = obj(progress?.['parked']);
  const result = obj(job.returnvalue) ?? obj(progress?.['result']);
  const done = arr(result?.['steps'])
    .map((s) => stepOf(s, 'done'))
    .filter((s): s is IncidentStep => s !== undefined);
  // A parked job shows its whole plan: steps done so far with their status, the rest as planned
  // (with the argv they would run); a finished one its plan with what each step did.
  const parkedPlan = state === 'delayed' || state === 'waiting' || state === 'active' ? arr(obj(parked?.['plan'])?.['steps']) : [];
  const plan = parkedPlan.length ? parkedPlan : arr(obj(result?.['plan'])?.['steps']);
  const all = plan.map((s) => stepOf(s, 'planned')).filter((s): s is IncidentStep => s !== undefined);
  const steps = all.length
    ? all.map((s) => {
        const d = done.find((x) => x.id === s.id);
        return d ? { ...d, evidence: d.evidence.length ? d.evidence : s.evidence } : { ...s, status: 'planned' };
      })
    : done;
  const waiting =
    state === 'delayed' && parked
      ? {
          reason: str(parked['reason']) ?? '?',
          why: str(parked['why']) ?? '',
          ...(str(parked['since']) ? { since: str(parked['since']) as string } : {}),
        }
      : undefined;
  const data = obj(job.data);
  const where = nodeOfStoredJob(queue, parsed.success ? parsed.data : undefined);
  const signals = arr(data?.['evidence'])
    .map(obj)
    .filter((e): e is Record<string, unknown> => e !== undefined)
    .map((e) => ({ source: str(e['source']) ?? '?', summary: str(e['summary']) ?? '', raw: e['raw'] }));
  return {
    id: job.id,
    queue,
    node: where.node ?? '(cluster)',
    ...(where.recordNames ? { recordNames: where.recordNames } : {}),
    runbook: parsed.success ? parsed.data.runbook : job.name,
    state,
    createdAt: new Date(job.timestamp).toISOString(),
    ...(job.finishedOn ? { finishedAt: new Date(job.finishedOn).toISOString() } : {}),
    attemptsMade: job.attemptsMade,
    ...(str(result?.['mode']) ? { mode: str(result?.['mode']) as string } : {}),
    ...(str(result?.['modeWhy']) ? { modeWhy: str(result?.['modeWhy']) as string } : {}),
    ...(str(result?.['outcome']) ? { outcome: str(result?.['outcome']) as string } : {}),
    ...(str(result?.['summary']) ? { summary: str(result?.['summary']) as string } : {}),
    ...(str(result?.['ranOn']) ? { ranOn: str(result?.['ranOn']) as string } : {}),
    ...(job.failedReason ? { failedReason: job.failedReason } : {}),
    refusals: strings(result?.['refusals']),
    steps,
    ...(waiting ? { waiting } : {}),
    signals,
    ...(data?.['target'] !== undefined ? { target: data['target'] } : {}),
    ...(parsed.success && parsed.data.retry ? { retry: parsed.data.retry } : {}),
    valid: parsed.success,
  };
}

/** The state an operator filters on: BullMQ's, with `parked` for a delayed job waiting on a control. */
export const consoleState = (i: Pick<Incident, 'state' | 'waiting'>): string => (i.waiting ? 'parked' : i.state);
