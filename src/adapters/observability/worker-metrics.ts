import { LeanCounter } from './lean-exposition.ts';
import { labelValue } from './text-format.ts';

// A worker process's own counts (node agent, cluster worker), on its probe server's /metrics.
// Named apart from the fleet-wide volume_medic_jobs_finished_total and
// volume_medic_untrusted_refused_total (read from Redis, exported by one receiver): a query that
// sums volume_medic_jobs_finished_total would otherwise count every job twice. These say which
// process finished or refused it; they restart at 0 with the process (use increase()/rate()).

/**
 * volume_medic_node_remediation_in_progress{node}: 1 from the moment a job of this process is
 * about to apply its first destructive step on a node until that job's run ends (done, failed or
 * parked), else 0. What kured can wait on, through the alert VolumeMedicRemediationInProgress (docs/coordination.md).
 */
interface InProgressGauge {
  start(node: string): void;
  end(node: string): void;
  exposition(): string;
}

export interface WorkerMetrics {
  finished: LeanCounter<'runbook' | 'outcome'>;
  untrusted: LeanCounter<'kind' | 'reason'>;
  inProgress: InProgressGauge;
  /** All of them in the text format, for the probe server's /metrics. */
  exposition(): string;
}

const IN_PROGRESS = 'volume_medic_node_remediation_in_progress';

function inProgressGauge(): InProgressGauge {
  // Jobs acting per node; a node seen once keeps its series (at 0), so an alert's `for` sees it end.
  const running = new Map<string, number>();
  return {
    start: (node) => running.set(node, (running.get(node) ?? 0) + 1),
    end: (node) => running.set(node, Math.max(0, (running.get(node) ?? 0) - 1)),
    exposition: () =>
      [
        `# HELP ${IN_PROGRESS} 1 while a job of this process runs a destructive step on the node (from its first destructive step to the end of that run), else 0.`,
        `# TYPE ${IN_PROGRESS} gauge`,
        ...[...running].map(([node, n]) => `${IN_PROGRESS}{node="${labelValue(node)}"} ${n > 0 ? 1 : 0}`),
        '',
      ].join('\n'),
  };
}

export function createWorkerMetrics(): WorkerMetrics {
  const finished = new LeanCounter({
    name: 'volume_medic_worker_jobs_finished_total',
    help: 'Jobs this worker process finished, by runbook and outcome (the fleet-wide count is volume_medic_jobs_finished_total on the receiver).',
    labelNames: ['runbook', 'outcome'],
  });
  const untrusted = new LeanCounter({
    name: 'volume_medic_worker_untrusted_refused_total',
    help: 'Jobs and control records this worker process refused as untrusted, by kind and reason (the fleet-wide count is volume_medic_untrusted_refused_total on the receiver).',
    labelNames: ['kind', 'reason'],
  });
  const inProgress = inProgressGauge();
  return { finished, untrusted, inProgress, exposition: () => `${finished.exposition()}\n${untrusted.exposition()}\n${inProgress.exposition()}` };
}
