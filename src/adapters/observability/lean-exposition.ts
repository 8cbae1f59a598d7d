import { buildInfo, type BuildInfo } from './build-info.ts';
import { labelValue } from './text-format.ts';

// The workers' /metrics (node agent, cluster worker) in Prometheus' text format without
// prom-client: an idle node agent would hold it for two counters and a few process series, in RSS
// on every node (bench/README.md, "The agent against its floor"). The receiver keeps
// prom-client. Same names and output as prom-client's for the same values
// (test/unit/adapters/observability/lean-exposition.test.ts compares them).

export const BUILD_INFO_METRIC = 'volume_medic_build_info';
export const BUILD_INFO_HELP =
  'Always 1: the version (package.json), source commit (VOLUME_MEDIC_REVISION at build, else unknown) and Node.js version of this process.';

const helpText = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

/** A counter with labels; a series appears with its first increment, as prom-client's does. */
export class LeanCounter<L extends string> {
  /** Value by its labels as rendered (`a="x",b="y"`). */
  readonly #series = new Map<string, number>();
  readonly #spec: { name: string; help: string; labelNames: readonly L[] };
  constructor(spec: { name: string; help: string; labelNames: readonly L[] }) {
    this.#spec = spec;
  }

  inc(labels: Readonly<Record<L, string>>, by = 1): void {
    const text = this.#spec.labelNames.map((n) => `${n}="${labelValue(String(labels[n]))}"`).join(',');
    this.#series.set(text, (this.#series.get(text) ?? 0) + by);
  }

  exposition(): string {
    const { name, help } = this.#spec;
    const lines = [...this.#series].map(([labels, value]) => `${name}{${labels}} ${value}`);
    return [`# HELP ${name} ${helpText(help)}`, `# TYPE ${name} counter`, ...lines, ''].join('\n');
  }
}

/**
 * The process series, read at scrape time: a few of prom-client's default metrics under the same
 * names (RSS, CPU, start time, heap), and volume_medic_build_info. Not collectDefaultMetrics: its
 * GC observer, event-loop histogram and per-heap-space series cost the node agent RSS
 * under a 30 s scrape, on every node (bench/README.md, "Probe server"); the rest of the default
 * series are the receiver's.
 */
export function leanProcessExposition(info: BuildInfo = buildInfo()): () => string {
  const start = Math.round(Date.now() / 1000 - process.uptime());
  const buildLine = `${BUILD_INFO_METRIC}{version="${labelValue(info.version)}",commit="${labelValue(info.revision)}",node_version="${labelValue(info.nodeVersion)}"} 1`;
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
      `# HELP ${BUILD_INFO_METRIC} ${BUILD_INFO_HELP}\n# TYPE ${BUILD_INFO_METRIC} gauge\n${buildLine}\n`
    );
  };
}
