// The node agent's memory floor (issue 33): Node in the DaemonSet's flags with one idle BullMQ
// Worker on a node queue, as our agent configures it (drainDelay, stalled checks, lock), and
// nothing else. Plain JavaScript, as the deployed agent runs (`npm run build`): no TypeScript
// loader in the process. bench/agent-rss.ts starts it beside the real agent.
import { Worker } from 'bullmq';

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
