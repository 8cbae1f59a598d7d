import { parseConfig } from '../../../src/core/config/load.ts';
import { createLogger } from '../../../src/adapters/observability/logger.ts';
import { runRunbook } from '../../../workers/engine/run-runbook.ts';
import { createRealHost } from '../../../workers/host/real-host.ts';
import { createNodeAgent } from '../../../workers/node-agent/agent.ts';
import { journalRunbook } from './journal-runbook.ts';

// A real node agent (enforce mode) whose residual-multipath-cleanup is the journal runbook, run
// by the real engine against a real host rooted at HOST_ROOT. PAUSE_BEFORE=<step id> makes that
// step hang before its effect and prints PAUSED <step> (the test SIGKILLs the agent then).

const config = parseConfig('node-agent', {
  redisUrl: process.env['REDIS_URL'],
  queuePrefix: process.env['QUEUE_PREFIX'],
  nodeName: process.env['NODE_NAME'],
  signingKeysDir: process.env['SIGNING_KEYS_DIR'],
  defaultMode: 'enforce',
  lockDurationMs: 1_000,
  logLevel: 'warn',
});
const root = process.env['HOST_ROOT']!;
const host = createRealHost({ root, timeoutMs: 10_000 });
const def = journalRunbook(process.env['PAUSE_BEFORE'] || undefined, (step) => process.stdout.write(`PAUSED ${step}\n`));
createNodeAgent({
  config,
  log: createLogger('journal-agent', 'warn'),
  registry: { 'residual-multipath-cleanup': (job, ctx) => runRunbook(def, job, ctx, { host, stateDir: '/var/lib/volume-medic' }) },
});
process.stdout.write('READY\n');
