import { parseConfig } from '../../src/core/config/load.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import type { RunbookResult } from '../../src/core/catalogue/result.ts';

// A node agent (the real createNodeAgent: BullMQ worker, job parsing, statistics) whose
// residual-multipath-cleanup is a trivial stand-in: it prints STARTED <jobId> <epoch ms, µs
// precision> the moment the runbook starts and finishes at once. The latency benchmark measures
// webhook -> that line; a real runbook's own duration is another benchmark's business.

const config = parseConfig('node-agent', {
  redisUrl: process.env['REDIS_URL'],
  queuePrefix: process.env['QUEUE_PREFIX'],
  signingKeysDir: process.env['SIGNING_KEYS_DIR'],
  nodeName: process.env['NODE_NAME'],
  logLevel: 'warn',
});
const agent = createNodeAgent({
  config,
  log: createLogger('bench-agent', 'warn'),
  registry: {
    'residual-multipath-cleanup': async (_job, ctx) => {
      process.stdout.write(`STARTED ${ctx.jobId} ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`);
      const result: RunbookResult = {
        runbook: 'residual-multipath-cleanup',
        mode: ctx.mode,
        outcome: 'nothing-to-do',
        summary: 'bench stand-in',
        facts: null,
        plan: null,
        refusals: [],
        steps: [],
        commands: [],
        ranOn: ctx.ranOn,
      };
      return result;
    },
  },
});
await agent.consumer.ready();
process.stdout.write('READY\n');
process.on('SIGTERM', () => void agent.close().then(() => process.exit(0)));
