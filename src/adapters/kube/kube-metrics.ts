import { Counter, Gauge, type Registry } from 'prom-client';

// The Kubernetes adapter's metrics, registered on the receiver's registry so /metrics shows them.

export interface KubeMetrics {
  up: Gauge<'watch'>;
  restarts: Counter<'watch'>;
  relists: Counter<'watch'>;
  /** Objects seen by a watch or the reconcile loop, by what became of them. */
  observed: Counter<'watch' | 'outcome'>;
  reconciles: Counter<'outcome'>;
}

export function createKubeMetrics(registry: Registry): KubeMetrics {
  return {
    up: new Gauge({
      name: 'volume_medic_kube_watch_up',
      help: '1 while a Kubernetes watch is listed and connected, 0 while it restarts or is stopped.',
      labelNames: ['watch'],
      registers: [registry],
    }),
    restarts: new Counter({
      name: 'volume_medic_kube_watch_restarts_total',
      help: 'Restarts of a Kubernetes watch after an error.',
      labelNames: ['watch'],
      registers: [registry],
    }),
    relists: new Counter({
      name: 'volume_medic_kube_watch_relists_total',
      help: 'Full relists of a watched collection after the first (410 Gone, restarts).',
      labelNames: ['watch'],
      registers: [registry],
    }),
    observed: new Counter({
      name: 'volume_medic_kube_observed_total',
      help: 'Kubernetes objects the adapter looked at, by watch and outcome (signal, ignored, invalid, own, unchanged, store_failed).',
      labelNames: ['watch', 'outcome'],
      registers: [registry],
    }),
    reconciles: new Counter({
      name: 'volume_medic_kube_reconciles_total',
      help: 'Periodic reconcile runs by outcome (ok, failed).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}
