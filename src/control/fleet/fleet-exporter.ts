import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { Gauge, type Registry } from 'prom-client';
import { LeaseElection } from '../../adapters/kube/lease-election.ts';
import { inCluster } from '../../core/config/in-cluster.ts';
import type { Logger } from '../../adapters/observability/logger.ts';

// Which receiver replica exports the fleet-wide series (jobs finished, refused work, breakers,
// parked jobs: read from Redis, the same numbers whichever replica reads them). With Kubernetes
// access the replicas elect one on a Lease and only it exports them, so a sum over replicas is
// right; the others serve their own process series only. Without Kubernetes access (npm start, a
// single process) it exports them.

export const FLEET_LEASE_NAME = 'volume-medic-fleet-metrics';
const FLEET_EXPORTER_METRIC = 'volume_medic_fleet_metrics_exporter';

export interface FleetExporter {
  /** Does this replica export the fleet-wide series now? */
  exports(): boolean;
  close(): Promise<void>;
}

const SA_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The namespace the Lease lives in: the pod's own, else the kubeconfig context's, else `default`. */
export function ownNamespace(kc: KubeConfig, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (inCluster(env)) {
    try {
      const ns = readFileSync(SA_NAMESPACE, 'utf8').trim();
      if (ns) return ns;
    } catch {
      // Not a pod after all (or no token mounted): fall through.
    }
  }
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

export interface FleetExporterOptions {
  registry: Registry;
  log: Logger;
  /** Kubernetes access for the Lease; undefined: a single process, always exports. */
  kubeConfig: KubeConfig | undefined;
  /** 0: no election. */
  leaseSeconds: number;
  namespace?: string;
  leaseName?: string;
  identity?: string;
}

export function startFleetExporter(opts: FleetExporterOptions): FleetExporter {
  const election =
    opts.kubeConfig && opts.leaseSeconds > 0
      ? new LeaseElection({
          kubeConfig: opts.kubeConfig,
          namespace: opts.namespace ?? ownNamespace(opts.kubeConfig),
          name: opts.leaseName ?? FLEET_LEASE_NAME,
          identity: opts.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`,
          leaseDurationSeconds: opts.leaseSeconds,
          log: opts.log,
        })
      : undefined;
  const exports = (): boolean => election?.leading() ?? true;
  new Gauge({
    name: FLEET_EXPORTER_METRIC,
    help: '1 on the one receiver that exports the fleet-wide series (the leader of the Lease volume-medic-fleet-metrics, or a receiver without Kubernetes access), 0 on the others.',
    registers: [opts.registry],
    // Read at scrape time: leadership also ends by itself when renewals stop (renew deadline).
    collect() {
      this.set(exports() ? 1 : 0);
    },
  });
  election?.start();
  return { exports, close: async () => election?.stop({ release: true }) };
}
