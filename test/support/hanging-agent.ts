// A node agent whose residual-multipath-cleanup runbook never finishes: the integration test
// SIGKILLs this process mid-job to prove the job is taken again (stalled-job recovery).
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { testConfig } from './config.ts';

const config = testConfig({
  redisUrl: process.env['REDIS_URL']!,
  queuePrefix: process.env['QUEUE_PREFIX']!,
  nodeName: process.env['NODE_NAME']!,
  lockDurationMs: Number(process.env['LOCK_DURATION_MS'] ?? 1000),
});
createNodeAgent({
  config,
  log: createLogger('hanging-agent', 'silent'),
  registry: {
    'residual-multipath-cleanup': async (_job, ctx) => {
      process.stdout.write(`STARTED ${ctx.jobId} attempt=${ctx.attempt}\n`);
      return new Promise(() => {});
    },
  },
});
