import type { RemediationJob, RunbookName } from './jobs.ts';
import type { SignalSource } from './evidence.ts';

// What a receiver may give an agent without asking: the runbooks and evidence sources every agent
// of every release this one upgrades from runs (chart 0.2.0). A job beyond them (a runbook or a
// source added since) is stored only on a queue whose agent announced it runs it
// (src/adapters/jobstore/agent-runs.ts): an older agent fails such a job for good ("job data does
// not match the catalogue") and its key stays spent, so the job would never run, even once the
// agent is upgraded. A runbook or source added later needs nothing here: it is beyond the
// baseline by not being in it.

/** The runbooks a 0.2.0 agent runs. */
const BASELINE_RUNBOOKS: ReadonlySet<RunbookName> = new Set(['residual-multipath-cleanup', 'local-pv-placeholder', 'rbd-stale-mapping', 'rbd-unmap']);

/** The evidence sources a 0.2.0 agent's catalogue parses. */
const BASELINE_SOURCES: ReadonlySet<SignalSource> = new Set(['alertmanager', 'k8s-event', 'npd', 'k8s-watch', 'k8s-watch-event', 'api', 'agent']);

/** What of `job` is beyond the baseline: its runbook and the sources of its evidence; undefined when nothing is (no announcement needed). */
export function beyondBaseline(job: RemediationJob): { runbook?: RunbookName; sources: SignalSource[] } | undefined {
  const runbook = BASELINE_RUNBOOKS.has(job.runbook) ? undefined : job.runbook;
  let sources: SignalSource[] | undefined;
  for (const e of job.evidence) if (!BASELINE_SOURCES.has(e.source) && !sources?.includes(e.source)) (sources ??= []).push(e.source);
  if (runbook === undefined && sources === undefined) return undefined;
  return { ...(runbook ? { runbook } : {}), sources: sources ?? [] };
}
