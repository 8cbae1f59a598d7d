import { Counter, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from './process-metrics.ts';

// The receiver's own metrics (with the process series every volume-medic process has:
// process-metrics.ts). Fleet-wide job results come from catalogue/job-stats.ts and are appended to
// the same /metrics answer.

export interface ReceiverMetrics {
  registry: Registry;
  webhooks: Counter<'source' | 'outcome'>;
  ignored: Counter<'source' | 'reason'>;
  enqueued: Counter<'runbook'>;
  deduplicated: Counter<'runbook'>;
  requestSeconds: Histogram<'route'>;
  repeatAnswers: Counter<'source'>;
  enrolments: Counter<'as' | 'outcome'>;
}

export function createReceiverMetrics(): ReceiverMetrics {
  const registry = new Registry();
  registerProcessMetrics(registry);
  return {
    registry,
    webhooks: new Counter({
      name: 'volume_medic_webhooks_total',
      help: 'Webhook requests by source and outcome (accepted, bad_json, too_large, invalid, unauthorized, unavailable).',
      labelNames: ['source', 'outcome'],
      registers: [registry],
    }),
    ignored: new Counter({
      name: 'volume_medic_signals_ignored_total',
      help: 'Alerts, events and conditions that did not become a job, by reason.',
      labelNames: ['source', 'reason'],
      registers: [registry],
    }),
    enqueued: new Counter({
      name: 'volume_medic_jobs_enqueued_total',
      help: 'Remediation jobs stored as new jobs, by runbook.',
      labelNames: ['runbook'],
      registers: [registry],
    }),
    deduplicated: new Counter({
      name: 'volume_medic_jobs_deduplicated_total',
      help: 'Jobs folded into an existing job with the same idempotency key, by runbook.',
      labelNames: ['runbook'],
      registers: [registry],
    }),
    repeatAnswers: new Counter({
      name: 'volume_medic_webhook_repeat_answers_total',
      help: 'Alertmanager webhooks answered from an earlier body with the same alerts as written, whose jobs are all still stored (no validating or triage of the alerts).',
      labelNames: ['source'],
      registers: [registry],
    }),
    enrolments: new Counter({
      name: 'volume_medic_enrolments_total',
      help: 'POST /v1/enrol by who enrolled (node-agent, cluster-worker) and outcome (enrolled, invalid, unauthorized, forbidden, unavailable).',
      labelNames: ['as', 'outcome'],
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'volume_medic_webhook_duration_seconds',
      help: 'Time from request to answer for webhook routes.',
      labelNames: ['route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
  };
}
