import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client';
import { buildInfo, type BuildInfo } from './build-info.ts';
import { BUILD_INFO_HELP, BUILD_INFO_METRIC } from './lean-exposition.ts';

// Every volume-medic process's own series on its /metrics: prom-client's default metrics under
// their standard names (process_cpu_seconds_total, process_resident_memory_bytes,
// process_start_time_seconds, nodejs_heap_size_used_bytes, nodejs_eventloop_lag_seconds, ...:
// the names Node.js dashboards and kube-prometheus' rules expect, no prefix), and
// volume_medic_build_info. (The workers' lean series: lean-exposition.ts.)

export function registerProcessMetrics(registry: Registry, info: BuildInfo = buildInfo()): void {
  collectDefaultMetrics({ register: registry });
  const g = new Gauge({
    name: BUILD_INFO_METRIC,
    help: BUILD_INFO_HELP,
    labelNames: ['version', 'commit', 'node_version'],
    registers: [registry],
  });
  g.set({ version: info.version, commit: info.revision, node_version: info.nodeVersion }, 1);
}
