import { labelValue } from './text-format.ts';
import type { ConnectionState } from '../redis/redis-connections.ts';
import type { ReplicaAckStatus } from '../redis/replica-ack.ts';

// What a process says about its Redis connections and the replica acknowledgement, in
// Prometheus text (appended to /metrics) and in words (/readyz).

export function connectionsExposition(states: readonly ConnectionState[]): string {
  if (states.length === 0) return '';
  const lines = [
    '# HELP volume_medic_redis_connection_ready 1 while this Redis connection of the process is ready, else 0.',
    '# TYPE volume_medic_redis_connection_ready gauge',
    ...states.map((s) => `volume_medic_redis_connection_ready{connection="${labelValue(s.name)}"} ${s.ready ? 1 : 0}`),
    '# HELP volume_medic_redis_connection_replacements_total Times this Redis connection ended (ioredis gave up on it) and was brought back.',
    '# TYPE volume_medic_redis_connection_replacements_total counter',
    ...states.map((s) => `volume_medic_redis_connection_replacements_total{connection="${labelValue(s.name)}"} ${s.replacements}`),
    '# HELP volume_medic_redis_connection_reconnects_total Times ioredis reconnected this Redis connection by itself (a dropped socket, a restart, a failover).',
    '# TYPE volume_medic_redis_connection_reconnects_total counter',
    ...states.map((s) => `volume_medic_redis_connection_reconnects_total{connection="${labelValue(s.name)}"} ${s.reconnects}`),
  ];
  return `${lines.join('\n')}\n`;
}

export function replicaAckExposition(s: ReplicaAckStatus): string {
  return [
    '# HELP volume_medic_replica_ack_required Replicas that must acknowledge a job before its webhook is answered 202 (REDIS_ACK_REPLICAS).',
    '# TYPE volume_medic_replica_ack_required gauge',
    `volume_medic_replica_ack_required ${s.required}`,
    '# HELP volume_medic_replica_ack_ok 1 when the last acknowledgement round had enough replicas, 0 when not (webhooks are answered 503 meanwhile); 1 before the first round.',
    '# TYPE volume_medic_replica_ack_ok gauge',
    `volume_medic_replica_ack_ok ${!s.checked || s.ok ? 1 : 0}`,
    '# HELP volume_medic_replica_ack_acknowledged Replicas that acknowledged the last round.',
    '# TYPE volume_medic_replica_ack_acknowledged gauge',
    `volume_medic_replica_ack_acknowledged ${s.acknowledged}`,
    '# HELP volume_medic_replica_ack_rounds_total Replica acknowledgement rounds by outcome (acknowledged, not_enough: fewer replicas within REDIS_ACK_TIMEOUT_MS, error: could not ask).',
    '# TYPE volume_medic_replica_ack_rounds_total counter',
    `volume_medic_replica_ack_rounds_total{outcome="acknowledged"} ${s.rounds.acknowledged}`,
    `volume_medic_replica_ack_rounds_total{outcome="not_enough"} ${s.rounds.notEnough}`,
    `volume_medic_replica_ack_rounds_total{outcome="error"} ${s.rounds.error}`,
    '',
  ].join('\n');
}

/** For /readyz: a short phrase for `status`, and the details. */
export function replicaAckReport(s: ReplicaAckStatus): { ok: boolean; short: string; report: Record<string, unknown> } {
  const ok = !s.checked || s.ok;
  const report: Record<string, unknown> = {
    required: s.required,
    ...(s.checked ? { acknowledged: s.acknowledged, lastRound: new Date(s.at ?? 0).toISOString() } : { lastRound: 'none yet' }),
    ...(s.failingSince !== undefined ? { failingSince: new Date(s.failingSince).toISOString() } : {}),
    ...(!ok && s.error ? { error: s.error } : {}),
    ...(!ok
      ? {
          meaning: 'new jobs are stored but their webhooks are answered 503 (the sender retries) until a replica acknowledges them: REDIS_ACK_REPLICAS',
        }
      : {}),
  };
  return { ok, short: `no replica acknowledgement (${s.acknowledged} of ${s.required}): webhooks answered 503`, report };
}
