import { labelValue } from '../observability/text-format.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { Breakers } from './breakers.ts';
import { ControlsStore } from './controls-store.ts';
import { ParkReason } from '../../core/controls/records.ts';

// What /readyz and /metrics say about the controls. A pause does not make the receiver unready:
// webhooks are still stored (nothing is lost), so load balancers must keep sending; /readyz
// reports the pause and the tripped breakers instead, and /metrics exposes them as gauges to
// alert on ("page a human"). Pauses are read through the receiver's ControlsStore, which
// verifies seals as the agents do: a pause written straight into Redis holds no job, so it must
// not show as one here either (it is reported as a refused control instead).

export interface ControlsSummary {
  paused: { cluster: boolean; nodes: string[]; runbooks: string[] };
  breakersTripped: { breaker: string; why: string; at: string; sources?: Record<string, number> }[];
  parked: Record<ParkReason, number>;
}

/** `store`: the receiver's, verifying seals; without one (no keys configured) records are taken as stored. */
export async function controlsSummary(
  redis: RedisConnection,
  prefix: string,
  store: ControlsStore = new ControlsStore(redis, prefix),
): Promise<ControlsSummary> {
  const [pauses, trips, parked] = await Promise.all([store.pauses(), new Breakers(redis, prefix).tripped(), store.parkedJobs()]);
  const count: Record<ParkReason, number> = { paused: 0, approval: 0, breaker: 0, evidence: 0, coordination: 0 };
  for (const p of parked) count[p.reason] += 1;
  return {
    paused: {
      cluster: pauses.cluster !== undefined,
      nodes: Object.keys(pauses.nodes).sort(),
      runbooks: Object.keys(pauses.runbooks).sort(),
    },
    breakersTripped: trips.map((t) => ({ breaker: t.breaker, why: t.why, at: t.at, ...(t.sources ? { sources: t.sources } : {}) })),
    parked: count,
  };
}

const sourcesText = (sources: Record<string, number>): string =>
  Object.entries(sources)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

export function controlsExposition(s: ControlsSummary): string {
  const lines = [
    '# HELP volume_medic_paused 1 while jobs are held by a pause switch (scope: cluster, node/<name> or runbook/<name>).',
    '# TYPE volume_medic_paused gauge',
    `volume_medic_paused{scope="cluster"} ${s.paused.cluster ? 1 : 0}`,
    ...s.paused.nodes.map((n) => `volume_medic_paused{scope="node/${labelValue(n)}"} 1`),
    ...s.paused.runbooks.map((r) => `volume_medic_paused{scope="runbook/${labelValue(r)}"} 1`),
    '# HELP volume_medic_breaker_tripped 1 while a blast-radius breaker is tripped (reset through POST /v1/breakers/reset).',
    '# TYPE volume_medic_breaker_tripped gauge',
    ...['cluster', 'storm'].filter((b) => !s.breakersTripped.some((t) => t.breaker === b)).map((b) => `volume_medic_breaker_tripped{breaker="${b}"} 0`),
    // `sources`: who started the nodes of a storm ("alertmanager 6"), so the alert names the sender.
    ...s.breakersTripped.map(
      (t) => `volume_medic_breaker_tripped{breaker="${labelValue(t.breaker)}"${t.sources ? `,sources="${labelValue(sourcesText(t.sources))}"` : ''}} 1`,
    ),
    '# HELP volume_medic_jobs_parked Jobs waiting on a control, on evidence to mature or on another tool acting on their node, by reason (paused, approval, breaker, evidence, coordination).',
    '# TYPE volume_medic_jobs_parked gauge',
    ...ParkReason.options.map((r) => `volume_medic_jobs_parked{reason="${r}"} ${s.parked[r]}`),
  ];
  return `${lines.join('\n')}\n`;
}
