import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectionState } from '../../../../src/adapters/redis/redis-connections.ts';
import { ENDED_RESTART_MS } from '../../../../src/adapters/redis/redis-connections.ts';
import { startProbeServer, type ProbeServer } from '../../../../src/adapters/observability/probe-server.ts';

// The probe server's answers from the states it is given (the real processes:
// test/int/workers/worker-probes.int.test.ts). Liveness follows the receiver's rule: only a connection
// that has kept ending past ENDED_RESTART_MS fails it.

const NOW = 1_800_000_000_000;
const silent = { info: () => {}, warn: () => {} };
let server: ProbeServer | undefined;
afterEach(async () => server?.close());

const ready: ConnectionState = { name: 'worker', status: 'ready', ready: true, replacements: 0, reconnects: 0 };
const ended = (forMs: number): ConnectionState => ({
  name: 'worker',
  status: 'end',
  ready: false,
  notReadySince: NOW - forMs,
  endedSince: NOW - forMs,
  replacements: 0,
  reconnects: 0,
  lastError: 'Connection is closed.',
});

async function serve(states: ConnectionState[], running = true, registries: Registry[] = []): Promise<ProbeServer> {
  server = await startProbeServer({
    port: 0,
    host: '127.0.0.1',
    log: silent,
    connections: () => states,
    running: () => running,
    expositions: registries.map((r) => () => r.metrics()),
    now: () => NOW,
  });
  return server;
}
const get = async (s: ProbeServer, path: string) => {
  const r = await fetch(`${s.url}${path}`);
  return { status: r.status, body: await r.text() };
};

describe('the probe server', () => {
  it('fails liveness once a connection has kept ending past ENDED_RESTART_MS, not before', async () => {
    const s = await serve([ended(ENDED_RESTART_MS - 1_000)]);
    expect((await get(s, '/healthz')).status).toBe(200);
    await s.close();
    const t = await serve([ended(ENDED_RESTART_MS + 1_000)]);
    const r = await get(t, '/healthz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toEqual({
      status: 'cannot recover: a Redis connection keeps ending',
      connections: { worker: 'end for 61 s: Connection is closed.' },
    });
  });

  it('is not ready while its worker does not run, though every connection is ready', async () => {
    const s = await serve([ready], false);
    const r = await get(s, '/readyz');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toEqual({
      status: 'not ready: the worker is not running',
      worker: 'not running',
      connections: { worker: 'ready' },
    });
    expect((await get(s, '/healthz')).status).toBe(200);
  });

  it('serves the process series, the given registries and the connections on /metrics', async () => {
    const extra = new Registry();
    new Counter({ name: 'volume_medic_test_things_total', help: 'test', registers: [extra] }).inc(3);
    const s = await serve([ready], true, [extra]);
    const r = await fetch(`${s.url}/metrics`);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await r.text();
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^volume_medic_test_things_total 3$/m);
    expect(text).toMatch(/^volume_medic_worker_running 1$/m);
    expect(text).toMatch(/^volume_medic_redis_connection_ready\{connection="worker"\} 1$/m);
  });

  it('refuses to start on a port already in use (the process then fails to start)', async () => {
    const s = await serve([ready]);
    await expect(startProbeServer({ port: s.port, host: '127.0.0.1', log: silent, connections: () => [], running: () => true })).rejects.toThrow(/EADDRINUSE/);
  });
});
