import { fileURLToPath } from 'node:url';
import { nothingToDo } from '../../support/stub-result.ts';
import { join } from 'node:path';
import type { RunbookName } from '../../../src/core/catalogue/jobs.ts';
import type { RunbookHandler, RunbookRegistry } from '../../../workers/engine/registry.ts';
import { upgradeRunbook } from './upgrade-runbook.ts';

// A real node agent of one release: that release's createNodeAgent (BullMQ worker, seal
// verification, controls, breakers, journal), configuration parser, engine and real host, loaded
// from RELEASE_ROOT (a previous release's tree, with its own node_modules; absent: this tree).
// Its residual-multipath-cleanup is the upgrade runbook, rooted at HOST_ROOT, a fake host; every
// other runbook the release knows only says that it ran (`RAN <runbook> <job id> <version>`).
// It stops on SIGTERM as the real agent does (close the worker: the job under way finishes).

type Load = typeof import('../../../src/core/config/load.ts');
type Logger = typeof import('../../../src/adapters/observability/logger.ts');
type RunRunbook = typeof import('../../../workers/engine/run-runbook.ts');
type RealHost = typeof import('../../../workers/host/real-host.ts');
type Agent = typeof import('../../../workers/node-agent/agent.ts');
type Jobs = typeof import('../../../src/core/catalogue/jobs.ts');

const env = process.env;
const root = env['RELEASE_ROOT'] || fileURLToPath(new URL('../../..', import.meta.url));
const from = <T>(path: string): Promise<T> => import(join(root, path)) as Promise<T>;
const { parseConfig } = await from<Load>('src/core/config/load.ts');
const { createLogger } = await from<Logger>('src/adapters/observability/logger.ts');
const { runRunbook } = await from<RunRunbook>('workers/engine/run-runbook.ts');
const { createRealHost } = await from<RealHost>('workers/host/real-host.ts');
const { createNodeAgent } = await from<Agent>('workers/node-agent/agent.ts');
const { RUNBOOKS } = await from<Jobs>('src/core/catalogue/jobs.ts');

const config = parseConfig('node-agent', {
  redisUrl: env['REDIS_URL'],
  queuePrefix: env['QUEUE_PREFIX'],
  nodeName: env['NODE_NAME'],
  signingKeysDir: env['SIGNING_KEYS_DIR'],
  stateDir: env['STATE_DIR'],
  defaultMode: 'enforce',
  lockDurationMs: 2_000,
  // Hundreds of jobs a minute on four nodes: the breakers would (rightly) trip; they are not what this tests.
  breakerNodeDestructivePerHour: 0,
  breakerClusterDestructivePerHour: 0,
  breakerStormNodes: 0,
  logLevel: 'warn',
});
const host = createRealHost({ root: env['HOST_ROOT']!, timeoutMs: 10_000 });
const version = env['AGENT_VERSION'] ?? 'this';
// PAUSE_KEY: the job whose key contains it hangs before its second step (PAUSED <key> <step>).
const pauseKey = env['PAUSE_KEY'];
const def = upgradeRunbook(version, pauseKey ? { keyPart: pauseKey, onPause: (key, step) => process.stdout.write(`PAUSED ${key} ${step}\n`) } : undefined);
const stub =
  (runbook: RunbookName): RunbookHandler<RunbookName> =>
  async (_job, ctx) => {
    process.stdout.write(`RAN ${runbook} ${ctx.jobId} ${version}\n`);
    return nothingToDo(runbook, ctx);
  };
const agent = createNodeAgent({
  config,
  log: createLogger('versioned-agent', 'warn'),
  registry: {
    ...(Object.fromEntries(RUNBOOKS.map((r) => [r, stub(r)])) as RunbookRegistry),
    'residual-multipath-cleanup': (job, ctx) => runRunbook(def, job, ctx, { host, stateDir: '/var/lib/volume-medic' }),
  },
});
process.stdout.write('READY\n');
process.once('SIGTERM', () => {
  void agent.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
