// A real node agent process (createNodeAgent: BullMQ worker, seal verification, controls, audit,
// statistics) whose runbooks only say that they ran: `RAN <runbook> <jobId> <mode>` on stdout.
// Tests write jobs straight into Redis and watch what this process does with them.
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { RUNBOOKS, type RunbookName } from '../../src/catalogue/jobs.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../../workers/runbooks/registry.ts';
import type { RunbookResult } from '../../src/catalogue/result.ts';
import { testConfig } from './config.ts';
import { loadConfig } from '../../src/config/load.ts';

// Where Redis is: REDIS_URL, or the Sentinel / Cluster settings, read as the real agent reads them.
const env = process.env;
const redisOnly = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('REDIS_')));
const { redisUrl, redisSentinels, redisSentinelName, redisClusterNodes } = loadConfig(redisOnly);
const config = testConfig({
  ...(redisUrl ? { redisUrl } : {}),
  ...(redisSentinels ? { redisSentinels, redisSentinelName } : {}),
  ...(redisClusterNodes ? { redisClusterNodes } : {}),
  ...(env['LOCK_DURATION_MS'] ? { lockDurationMs: Number(env['LOCK_DURATION_MS']) } : {}),
  queuePrefix: process.env['QUEUE_PREFIX']!,
  nodeName: process.env['NODE_NAME']!,
  stateDir: process.env['STATE_DIR']!,
  controlsRecheckSeconds: 0.2,
  ...(process.env['DEFAULT_MODE'] === 'enforce' ? { defaultMode: 'enforce' as const } : {}),
});
const stub = (runbook: RunbookName): RunbookHandler<RunbookName> => async (_job: unknown, ctx: RunbookContext): Promise<RunbookResult> => {
  process.stdout.write(`RAN ${runbook} ${ctx.jobId} ${ctx.mode}\n`);
  return { runbook, mode: ctx.mode, outcome: 'nothing-to-do', summary: 'stub', facts: null, plan: null, refusals: [], steps: [], commands: [], ranOn: ctx.ranOn };
};
const agent = createNodeAgent({
  config,
  log: createLogger('stub-agent', process.env['LOG_LEVEL'] === 'info' ? 'info' : 'silent'),
  registry: Object.fromEntries(RUNBOOKS.map((r) => [r, stub(r)])) as RunbookRegistry,
});
process.stdout.write('READY\n');
process.once('SIGTERM', () => void agent.close().then(() => process.exit(0)));
