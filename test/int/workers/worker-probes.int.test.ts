import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../src/core/catalogue/queues.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../support/redis.ts';
import { isExecutable } from '../../support/executable.ts';
import { waitFor } from '../../support/wait.ts';
import { rawQueue } from '../../support/raw-jobs.ts';
import { CLUSTER_WORKER, NODE_AGENT, startWorkerProcess, type WorkerProcess } from '../../support/worker-process.ts';

// The node agent's and the cluster worker's probe server (src/adapters/observability/probe-server.ts,
// PROBE_PORT), on the real processes as `npm run node-agent` / `npm run cluster-worker` start
// them: what the kubelet's probes and Prometheus' PodMonitor get.

const PROMTOOL = process.env['PROMTOOL_BIN'] ?? '/usr/bin/promtool';
const prefix = uniquePrefix('probes');
const running: WorkerProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await dropPrefix(prefix);
});

const start = async (script: string, env: Record<string, string>): Promise<WorkerProcess> => {
  const p = await startWorkerProcess(script, env);
  running.push(p);
  return p;
};
const get = async (url: string): Promise<{ status: number; text: string }> => {
  const r = await fetch(url);
  return { status: r.status, text: await r.text() };
};
/** A sample's value in a Prometheus exposition, by its full series text (name{labels}). */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
/** A port nothing listens on (bound, then released). */
const closedPort = async (): Promise<number> => {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
};

describe("the node agent's probe server", () => {
  it('is live and ready once its worker takes jobs, and its /metrics has the process, worker and Redis series', async () => {
    const agent = await start(NODE_AGENT, { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, NODE_NAME: 'probe-node-a' });
    expect(await get(`${agent.url}/healthz`)).toEqual({ status: 200, text: '{"status":"ok"}' });
    const ready = await waitFor('the agent ready', async () => {
      const r = await get(`${agent.url}/readyz`);
      return r.status === 200 ? r : undefined;
    });
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready', connections: { worker: 'ready' } });
    const m = await get(`${agent.url}/metrics`);
    expect(m.status).toBe(200);
    expect(sample(m.text, 'volume_medic_worker_running')).toBe(1);
    expect(sample(m.text, 'volume_medic_redis_connection_ready{connection="worker"}')).toBe(1);
    expect(sample(m.text, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    expect(m.text).toMatch(/^volume_medic_build_info\{/m);
    expect(m.text).toMatch(/^# TYPE volume_medic_worker_jobs_finished_total counter$/m);
    // The text format Prometheus parses, by Prometheus' own linter (required in CI).
    if (isExecutable(PROMTOOL) || process.env['CI']) {
      const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: m.text, encoding: 'utf8', timeout: 30_000 });
      expect(lint.status, lint.stdout + lint.stderr).toBe(0);
    }
    expect((await get(`${agent.url}/nope`)).status).toBe(404);
    expect((await fetch(`${agent.url}/readyz`, { method: 'POST' })).status).toBe(405);
  });

  it('counts the work it refused and finished itself (an unsealed job)', async () => {
    const node = 'probe-node-b';
    const agent = await start(NODE_AGENT, { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, NODE_NAME: node });
    const q = rawQueue({ url: redisUrl() }, prefix, nodeQueueName(node));
    try {
      await q.add('residual-multipath-cleanup', { runbook: 'residual-multipath-cleanup', node }, { jobId: 'unsealed-1' });
      const m = await waitFor('the refusal counted', async () => {
        const t = (await get(`${agent.url}/metrics`)).text;
        return sample(t, 'volume_medic_worker_untrusted_refused_total{kind="job",reason="unsigned"}') === 1 ? t : undefined;
      });
      expect(sample(m, 'volume_medic_worker_jobs_finished_total{runbook="unknown",outcome="untrusted"}')).toBe(1);
    } finally {
      await q.close();
    }
  });

  it('is not ready while Redis cannot be reached, yet live (ioredis keeps reconnecting: no restart needed)', async () => {
    const agent = await start(NODE_AGENT, {
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
      QUEUE_PREFIX: prefix,
      NODE_NAME: 'probe-node-c',
    });
    const r = await get(`${agent.url}/readyz`);
    expect(r.status).toBe(503);
    const body = JSON.parse(r.text) as { status: string; connections: Record<string, string> };
    expect(body.status).toMatch(/a Redis connection is not ready/);
    expect(body.connections['worker']).toMatch(/^(connecting|reconnecting)/);
    expect((await get(`${agent.url}/healthz`)).status).toBe(200);
    expect(sample((await get(`${agent.url}/metrics`)).text, 'volume_medic_redis_connection_ready{connection="worker"}')).toBe(0);
  });

  it('closes its port and exits 0 on SIGTERM', async () => {
    const agent = await start(NODE_AGENT, { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, NODE_NAME: 'probe-node-d' });
    expect(await agent.stop()).toBe(0);
    await expect(fetch(`${agent.url}/healthz`)).rejects.toThrow();
  });
});

describe("the cluster worker's probe server", () => {
  it('is ready with its Redis connections and its worker, and exports its own series', async () => {
    const worker = await start(CLUSTER_WORKER, { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix });
    const ready = await waitFor('the cluster worker ready', async () => {
      const r = await get(`${worker.url}/readyz`);
      return r.status === 200 ? r : undefined;
    });
    // The no-agent check opens its connection when it first needs it.
    expect(JSON.parse(ready.text)).toMatchObject({ status: 'ready', connections: { producer: 'ready', worker: 'ready' } });
    expect((await get(`${worker.url}/healthz`)).status).toBe(200);
    const m = (await get(`${worker.url}/metrics`)).text;
    for (const c of ['producer', 'worker']) expect(sample(m, `volume_medic_redis_connection_ready{connection="${c}"}`), c).toBe(1);
    expect(sample(m, 'volume_medic_worker_running')).toBe(1);
    expect(sample(m, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('is not ready while Redis cannot be reached', async () => {
    const worker = await start(CLUSTER_WORKER, { REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, QUEUE_PREFIX: prefix });
    const r = await get(`${worker.url}/readyz`);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.text).connections).toMatchObject({
      producer: expect.stringMatching(/connecting/),
      worker: expect.stringMatching(/connecting/),
    });
    expect((await get(`${worker.url}/healthz`)).status).toBe(200);
  });
});
