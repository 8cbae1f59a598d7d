import type { IncomingMessage, ServerResponse } from 'node:http';
import { http } from '../http/node-http.ts';
import type { AddressInfo } from 'node:net';
import { connectionHealth, type ConnectionState } from '../redis/redis-connections.ts';
import { connectionsExposition } from './redis-health.ts';
import { leanProcessExposition } from './lean-exposition.ts';

// The probe server of the node agent and the cluster worker (PROBE_PORT): the kubelet's liveness
// and readiness probes and Prometheus' scrape, on node:http alone. No express: the agent runs on
// every node and its idle RSS is budgeted (bench/README.md, "Footprint").
//
// /healthz  200 unless a Redis connection has kept ending past ENDED_RESTART_MS: the same rule
//           (connectionHealth) as the receiver's /healthz. A Redis that is only away is not a
//           reason to restart: ioredis reconnects by itself.
// /readyz   200 while every Redis connection of the process is ready and its worker takes jobs;
//           503 otherwise (starting, Redis away, closing), with the connections' report.
// /metrics  the process series (RSS, CPU, heap; volume_medic_build_info: process-metrics.ts,
//           leanProcessExposition), the worker's own job and refusal counts, its Redis
//           connections, and whether it runs.
// Anything else: 404. Only GET and HEAD.

export interface ProbeServerOptions {
  port: number;
  host: string;
  /** The process's supervised Redis connections (every RedisConnections it owns). */
  connections: () => ConnectionState[];
  /** The worker takes jobs (started, not closing). */
  running: () => boolean;
  /** Series besides the process's, in the text format (the worker's counts: src/adapters/observability/worker-metrics.ts). */
  expositions?: readonly (() => string | Promise<string>)[];
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  now?: () => number;
}

export interface ProbeServer {
  /** http://host:port, with the port actually bound (PROBE_PORT=0: any free port). */
  url: string;
  port: number;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
};

export async function startProbeServer(o: ProbeServerOptions): Promise<ProbeServer> {
  const now = o.now ?? Date.now;
  const processSeries = leanProcessExposition();

  const metrics = async (): Promise<string> => {
    const texts = await Promise.all((o.expositions ?? []).map((e) => e()));
    const running = o.running() ? 1 : 0;
    return `${processSeries()}${texts.map((t) => `${t}\n`).join('')}${[
      "# HELP volume_medic_worker_running 1 while this process's worker takes jobs (started, not closing), else 0.",
      '# TYPE volume_medic_worker_running gauge',
      `volume_medic_worker_running ${running}`,
      '',
    ].join('\n')}${connectionsExposition(o.connections())}`;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      const c = connectionHealth(o.connections(), now());
      if (c.live) return json(res, 200, { status: 'ok' });
      return json(res, 503, { status: 'cannot recover: a Redis connection keeps ending', connections: c.report });
    }
    if (path === '/readyz') {
      const c = connectionHealth(o.connections(), now());
      const running = o.running();
      if (c.ready && running) return json(res, 200, { status: 'ready', connections: c.report });
      const why = [...(running ? [] : ['the worker is not running']), ...(c.ready ? [] : ['a Redis connection is not ready'])].join('; ');
      return json(res, 503, { status: `not ready: ${why}`, worker: running ? 'running' : 'not running', connections: c.report });
    }
    if (path === '/metrics') {
      const body = await metrics();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(body);
      return;
    }
    json(res, 404, { error: 'not found: /healthz, /readyz, /metrics' });
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      o.log.warn({ err: err.message, path: req.url }, 'probe server request failed');
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  // Probes and scrapes are short: a client that holds a socket open gets it closed.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${port}`;
  o.log.info({ address: o.host, port }, 'probe server listening (/healthz, /readyz, /metrics)');
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
