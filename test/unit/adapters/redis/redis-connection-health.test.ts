import { describe, expect, it } from 'vitest';
import { connectionHealth, ENDED_RESTART_MS, type ConnectionState } from '../../../../src/adapters/redis/redis-connections.ts';
import { connectionsExposition, replicaAckExposition, replicaAckReport } from '../../../../src/adapters/observability/redis-health.ts';

const NOW = 1_000_000_000;
const state = (s: Partial<ConnectionState> & { name: string }): ConnectionState => ({
  status: 'ready',
  ready: true,
  replacements: 0,
  reconnects: 0,
  ...s,
});

describe('connection health', () => {
  it('is ready and live when every connection is ready', () => {
    expect(connectionHealth([state({ name: 'producer' }), state({ name: 'replica-ack' })], NOW)).toEqual({
      ready: true,
      live: true,
      report: { producer: 'ready', 'replica-ack': 'ready' },
    });
  });

  it('is not ready while a connection reconnects, naming it, how long and why; still live (Redis may just be away)', () => {
    const h = connectionHealth(
      [
        state({ name: 'producer' }),
        state({
          name: 'replica-ack',
          status: 'reconnecting',
          ready: false,
          notReadySince: NOW - 12_000,
          lastError: 'WRONGPASS invalid username-password pair',
        }),
      ],
      NOW,
    );
    expect(h.ready).toBe(false);
    expect(h.live).toBe(true);
    expect(h.report['replica-ack']).toBe('reconnecting for 12 s: WRONGPASS invalid username-password pair');
  });

  it('is not live once a connection has kept ending for longer than ENDED_RESTART_MS, and live just before', () => {
    const ended = (ms: number) => state({ name: 'producer', status: 'end', ready: false, notReadySince: NOW - ms, endedSince: NOW - ms });
    expect(connectionHealth([ended(ENDED_RESTART_MS - 1)], NOW).live).toBe(true);
    expect(connectionHealth([ended(ENDED_RESTART_MS + 1)], NOW).live).toBe(false);
    expect(connectionHealth([ended(ENDED_RESTART_MS + 1)], NOW).ready).toBe(false);
  });
});

describe('what /metrics and /readyz say', () => {
  it('exposes one series per connection: ready, replacements, reconnects', () => {
    const text = connectionsExposition([
      state({ name: 'producer', replacements: 2, reconnects: 5 }),
      state({ name: 'replica-ack', status: 'end', ready: false }),
    ]);
    expect(text).toContain('volume_medic_redis_connection_ready{connection="producer"} 1\n');
    expect(text).toContain('volume_medic_redis_connection_ready{connection="replica-ack"} 0\n');
    expect(text).toContain('volume_medic_redis_connection_replacements_total{connection="producer"} 2\n');
    expect(text).toContain('volume_medic_redis_connection_reconnects_total{connection="producer"} 5\n');
    expect(connectionsExposition([])).toBe('');
  });

  it('says a replica acknowledgement is missing only after a round found it missing', () => {
    const rounds = { acknowledged: 3, notEnough: 2, error: 1 };
    const none = { required: 1, checked: false, ok: false, acknowledged: 0, rounds: { acknowledged: 0, notEnough: 0, error: 0 } };
    expect(replicaAckExposition(none)).toMatch(/^volume_medic_replica_ack_ok 1$/m);
    expect(replicaAckReport(none).ok).toBe(true);
    const failing = {
      required: 1,
      checked: true,
      ok: false,
      acknowledged: 0,
      at: NOW,
      failingSince: NOW - 5_000,
      error: '0 of 1 replica(s) acknowledged within 500 ms',
      rounds,
    };
    const text = replicaAckExposition(failing);
    expect(text).toMatch(/^volume_medic_replica_ack_ok 0$/m);
    expect(text).toMatch(/^volume_medic_replica_ack_rounds_total\{outcome="not_enough"\} 2$/m);
    expect(text).toMatch(/^volume_medic_replica_ack_rounds_total\{outcome="error"\} 1$/m);
    const report = replicaAckReport(failing);
    expect(report.ok).toBe(false);
    expect(report.short).toBe('no replica acknowledgement (0 of 1): webhooks answered 503');
    expect(report.report).toMatchObject({
      required: 1,
      acknowledged: 0,
      error: failing.error,
      failingSince: new Date(NOW - 5_000).toISOString(),
    });
    expect(replicaAckReport({ ...failing, ok: true, acknowledged: 2 }).report).not.toHaveProperty('error');
  });
});
