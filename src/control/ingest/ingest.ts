import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { Ignored, Signal } from '../../core/signals/index.ts';
import { triage, type TriageDeps } from '../triage/triage.ts';
import type { Enqueued, JobEnqueue } from '../../core/jobs/job-store.ts';

// Signals -> jobs -> queues: the one path every source takes (webhooks now, the Kubernetes watch
// later), so an incident seen twice gets the same key whichever way it came.

export interface IngestDeps extends TriageDeps {
  dispatcher: JobEnqueue;
}

export interface IngestResult {
  accepted: Enqueued[];
  ignored: Ignored[];
}

export interface ExplainResult {
  signals: Signal[];
  jobs: RemediationJob[];
  ignored: Ignored[];
}

export async function explain(signals: Signal[], ignored: Ignored[], deps: TriageDeps): Promise<ExplainResult> {
  const t = await triage(signals, deps);
  return { signals, jobs: t.jobs, ignored: [...ignored, ...t.ignored] };
}

export async function ingest(signals: Signal[], ignored: Ignored[], deps: IngestDeps): Promise<IngestResult> {
  const t = await triage(signals, deps);
  const accepted = await deps.dispatcher.enqueue(t.jobs);
  return { accepted, ignored: [...ignored, ...t.ignored] };
}
