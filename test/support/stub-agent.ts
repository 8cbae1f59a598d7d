// A real node agent process (createNodeAgent: BullMQ worker, seal verification, controls, audit,
// statistics) whose runbooks only say that they ran: `RAN <runbook> <jobId> <mode>` on stdout.
// Tests write jobs straight into Redis and watch what this process does with them.
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import { nothingToDo } from './stub-result.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { RUNBOOKS, type RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../../workers/engine/registry.ts';
import type { RunbookResult } from '../../src/core/catalogue/result.ts';
import { testConfig } from './config.ts';
import { loadConfig } from '../../src/core/config/load.ts';
import { enrolUntilDone } from '../../workers/engine/enrolled-keys.ts';

// Where Redis is: REDIS_URL, or the Sentinel / Cluster settings, read as the real agent reads them.
const env = process.env;
const redisOnly = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('REDIS_')));
const { redisUrl, redisSentinels, redisSentinelName, redisClusterNodes } = loadConfig('node-agent', redisOnly);
const log = createLogger('stub-agent', process.env['LOG_LEVEL'] === 'info' ? 'info' : 'silent');
// ENROL_URL: enrolled as the chart runs it: no issuer root, its node's keys (and Redis user) from the receiver.
const enrolled = env['ENROL_URL']
  ? await enrolUntilDone({
      target: { url: env['ENROL_URL'], tokenFile: env['ENROL_TOKEN_FILE']! },
      request: { as: 'node-agent', node: env['NODE_NAME']! },
      log,
      // As the real agent (workers/node-agent/main.ts): a new Redis password needs new
      // connections, so it stops and is started again (the DaemonSet; here the test).
      onRedisChanged: () => {
        process.stdout.write('REDIS-CHANGED\n');
        process.exit(0);
      },
    })
  : undefined;
const redisUser = enrolled?.redis();
const config = testConfig({
  ...(enrolled ? { signingKeysDir: undefined, controlVerifyCertFile: env['CONTROL_VERIFY_CERT_FILE']!, enrolUrl: env['ENROL_URL']! } : {}),
  ...(redisUser ? { redisUsername: redisUser.username, redisPassword: redisUser.password } : {}),
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
const stub =
  (runbook: RunbookName): RunbookHandler<RunbookName> =>
  async (_job: unknown, ctx: RunbookContext): Promise<RunbookResult> => {
    process.stdout.write(`RAN ${runbook} ${ctx.jobId} ${ctx.mode}\n`);
    return nothingToDo(runbook, ctx);
  };
const agent = createNodeAgent({
  config,
  log,
  ...(enrolled ? { enrolled } : {}),
  registry: Object.fromEntries(RUNBOOKS.map((r) => [r, stub(r)])) as RunbookRegistry,
});
process.stdout.write('READY\n');
process.once('SIGTERM', () => void agent.close().then(() => process.exit(0)));
