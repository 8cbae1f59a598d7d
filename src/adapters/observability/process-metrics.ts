import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client';
import { buildInfo, type BuildInfo } from './build-info.ts';

// Every volume-medic process's own series on its /metrics: prom-client's default metrics under
// their standard names (process_cpu_seconds_total, process_resident_memory_bytes,
// process_start_time_seconds, nodejs_heap_size_used_bytes, nodejs_eventloop_lag_seconds, ...:
// the names Node.js dashboards and kube-prometheus' rules expect, no prefix), and
// volume_medic_build_info.

const BUILD_INFO_METRIC = 'volume_medic_build_info';

export function registerProcessMetrics(registry: Registry, info: BuildInfo = buildInfo()): void {
  collectDefaultMetrics({ register: registry });
  const g = new Gauge({
    name: BUILD_INFO_METRIC,
    help: 'Always 1: the version (package.json), source commit (VOLUME_MEDIC_REVISION at build, else unknown) and Node.js version of this process.',
    labelNames: ['version', 'commit', 'node_version'],
    registers: [registry],
  });
  g.set({ version: info.version, commit: info.revision, node_version: info.nodeVersion }, 1);
}

/**
 * The node agent's and the cluster worker's process series, read at scrape time: a few of
 * prom-client's default metrics under the same names (RSS, CPU, start time, heap), and
 * volume_medic_build_info. Not collectDefaultMetrics: its GC observer, event-loop histogram and
 * per-heap-space series cost the node agent ~2.4 MiB of RSS under a 30 s scrape, on every node
 * (bench/README.md, "Probe server"); the rest of the default series are the receiver's.
 */
export function leanProcessExposition(info: BuildInfo = buildInfo()): () => string {
  const esc = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  const start = Math.round(Date.now() / 1000 - process.uptime());
  const buildLine = `${BUILD_INFO_METRIC}{version="${esc(info.version)}",commit="${esc(info.revision)}",node_version="${esc(info.nodeVersion)}"} 1`;
  const series = (name: string, type: string, help: string, value: number | string): string =>
    `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${value}\n`;
  return () => {
    const cpu = process.cpuUsage();
    const mem = process.memoryUsage();
    return (
      series('process_cpu_user_seconds_total', 'counter', 'Total user CPU time spent in seconds.', cpu.user / 1e6) +
      series('process_cpu_system_seconds_total', 'counter', 'Total system CPU time spent in seconds.', cpu.system / 1e6) +
      series('process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds.', (cpu.user + cpu.system) / 1e6) +
      series('process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds.', start) +
      series('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', mem.rss) +
      series('nodejs_heap_size_total_bytes', 'gauge', 'Process heap size from Node.js in bytes.', mem.heapTotal) +
      series('nodejs_heap_size_used_bytes', 'gauge', 'Process heap size used from Node.js in bytes.', mem.heapUsed) +
      series('nodejs_external_memory_bytes', 'gauge', 'Node.js external memory size in bytes.', mem.external) +
      `# HELP ${BUILD_INFO_METRIC} Always 1: the version (package.json), source commit (VOLUME_MEDIC_REVISION at build, else unknown) and Node.js version of this process.\n# TYPE ${BUILD_INFO_METRIC} gauge\n${buildLine}\n`
    );
  };
}
