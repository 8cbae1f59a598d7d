// The node agent's memory floor (issue 33): Node in the DaemonSet's flags and allocator settings
// with one idle BullMQ Worker on a node queue, as our agent configures it (drainDelay, stalled
// checks, lock), and nothing else. Plain JavaScript, as the deployed agent runs (`npm run build`):
// no TypeScript loader in the process. bench/run.ts and bench/agent-rss.ts start it beside the real
// agent, with the same command line and environment settings (bench/lib/deployed-command.ts).
// FLOOR_WITH (comma-separated) adds libraries the idle agent holds, one piece at a time, to show
// where the agent's distance from the floor goes: zod/mini (what the agent holds) or zod, pino,
// prom-client (imported only), http (a listening HTTP server, the probe server's transport,
// node:http taken with require as the agent does: src/adapters/http/node-http.ts).
import { createRequire } from 'node:module';
import { Worker } from 'bullmq';

for (const part of (process.env.FLOOR_WITH ?? '').split(',').filter(Boolean)) {
  if (part === 'http') {
    const { createServer } = createRequire(import.meta.url)('node:http');
    createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1');
  } else await import(part);
}

const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const worker = new Worker(`vm-node-{${process.env.NODE_NAME ?? 'floor'}}`, async () => ({}), {
  connection: { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null },
  prefix: process.env.QUEUE_PREFIX ?? 'floor',
  skipVersionCheck: true,
  concurrency: 1,
  drainDelay: 30,
  lockDuration: 30_000,
  stalledInterval: 30_000,
});
worker.on('error', () => {});
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
