import { LeanCounter } from './lean-exposition.ts';

// A worker process's own counts (node agent, cluster worker), on its probe server's /metrics.
// Named apart from the fleet-wide volume_medic_jobs_finished_total and
// volume_medic_untrusted_refused_total (read from Redis, exported by one receiver): a query that
// sums volume_medic_jobs_finished_total would otherwise count every job twice. These say which
// process finished or refused it; they restart at 0 with the process (use increase()/rate()).

export interface WorkerMetrics {
  finished: LeanCounter<'runbook' | 'outcome'>;
  untrusted: LeanCounter<'kind' | 'reason'>;
  /** Both in the text format, for the probe server's /metrics. */
  exposition(): string;
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
  return { finished, untrusted, exposition: () => `${finished.exposition()}\n${untrusted.exposition()}` };
}
