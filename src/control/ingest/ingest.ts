import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { Ignored, Signal } from '../../core/signals/index.ts';
import { triage, type TriageDeps } from '../triage/triage.ts';
import type { Enqueued, JobEnqueue } from '../../core/jobs/job-store.ts';
import type { AgentGate } from './agent-gate.ts';

// Signals -> jobs -> queues: the one path every source takes (webhooks now, the Kubernetes watch
// later), so an incident seen twice gets the same key whichever way it came.

export interface IngestDeps extends TriageDeps {
  dispatcher: JobEnqueue;
  /**
   * Holds jobs of runbooks (or evidence sources) newer than every supported release from queues
   * whose agent does not announce them (agent-gate.ts). The receiver always passes it; without it
   * (tests of triage and the webhooks alone) every job is stored.
   */
  gate?: Pick<AgentGate, 'admit'>;
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
  const admitted = deps.gate ? await deps.gate.admit(t.jobs) : { jobs: t.jobs, ignored: [] };
  const accepted = await deps.dispatcher.enqueue(admitted.jobs);
  return { accepted, ignored: [...ignored, ...t.ignored, ...admitted.ignored] };
}
