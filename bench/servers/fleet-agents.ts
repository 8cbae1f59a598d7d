import { Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import { announce } from '../../test/support/child.ts';
import { configParser } from '../../src/core/config/load.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { RUNBOOKS, type RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../src/core/catalogue/result.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../../workers/engine/registry.ts';

// Many simulated node agents in one process, for bench/fleet.ts. FLEET_KIND=ours: the real
// createNodeAgent per node (its BullMQ worker, seal checks, controls, statistics: the same code
// and the same two connections per agent as a DaemonSet pod), whose runbooks do nothing (no host).
// FLEET_KIND=bare: a bare BullMQ Worker per node queue with a no-op processor, the baseline.
// Nodes fleet-<FLEET_FROM>..fleet-<FLEET_TO - 1>. Says READY when every worker is connected;
// then `RAN <node> <jobId> <epoch ms>` and `DONE <node> <jobId>` (or `FAILED ...`) per job
// (batched into one IPC message every 100 ms). Redis: REDIS_URL, REDIS_CLUSTER_NODES (FLEET_TOPOLOGY=cluster)
// or REDIS_SENTINELS + REDIS_SENTINEL_NAME (bench/soak.ts; the real agent's `ours` kind only).

const from = Number(process.env['FLEET_FROM']);
const to = Number(process.env['FLEET_TO']);
const kind = process.env['FLEET_KIND'] === 'bare' ? 'bare' : 'ours';
const url = process.env['REDIS_URL'] ?? '';
/** FLEET_TOPOLOGY=cluster: REDIS_CLUSTER_NODES instead of REDIS_URL. */
const clusterNodes = process.env['REDIS_CLUSTER_NODES'];
const sentinels = process.env['REDIS_SENTINELS'];
const prefix = process.env['QUEUE_PREFIX']!;
const workMs = Number(process.env['FLEET_WORK_MS'] ?? 0);
/** FLEET_NAME: the nodes' name prefix (bench/job-lifecycle.ts runs both kinds at once on distinct nodes). */
const namePrefix = process.env['FLEET_NAME'] ?? 'fleet';
const nodeName = (i: number): string => `${namePrefix}-${String(i).padStart(5, '0')}`;

let pending: string[] = [];
setInterval(() => {
  if (pending.length === 0) return;
  announce(pending.join('\n'));
  pending = [];
}, 100).unref();
const say = (line: string): void => {
  pending.push(line);
};

const log = createLogger('fleet-agent', 'warn');
const stub =
  (runbook: RunbookName): RunbookHandler<RunbookName> =>
  async (_job: unknown, ctx: RunbookContext): Promise<RunbookResult> => {
    say(`RAN ${ctx.ranOn} ${ctx.jobId} ${Date.now()}`);
    return {
      runbook,
      mode: ctx.mode,
      outcome: 'nothing-to-do',
      summary: 'fleet stand-in',
      facts: null,
      plan: null,
      refusals: [],
      steps: [],
      commands: [],
      ranOn: ctx.ranOn,
    };
  };
const registry = Object.fromEntries(RUNBOOKS.map((r) => [r, stub(r)])) as RunbookRegistry;

const BREAKER_SETTINGS = [
  ['BREAKER_STORM_NODES', 'breakerStormNodes'],
  ['BREAKER_NODE_DESTRUCTIVE_PER_HOUR', 'breakerNodeDestructivePerHour'],
  ['BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR', 'breakerClusterDestructivePerHour'],
] as const;

/** What each simulated agent is to this process: ready when waiting for jobs, closed at the end. */
const workers: { ready(): Promise<unknown>; close(): Promise<unknown> }[] = [];
// One schema for every simulated agent of this process (building it costs ~2 ms).
const configs = configParser('node-agent');
for (let i = from; i < to; i++) {
  const node = nodeName(i);
  if (kind === 'ours') {
    const config = configs({
      ...(clusterNodes
        ? { redisClusterNodes: clusterNodes.split(',') }
        : sentinels
          ? { redisSentinels: sentinels.split(','), redisSentinelName: process.env['REDIS_SENTINEL_NAME'] }
          : { redisUrl: url }),
      queuePrefix: prefix,
      nodeName: node,
      logLevel: 'warn',
      signingKeysDir: process.env['SIGNING_KEYS_DIR'],
      stateDir: `${process.env['STATE_DIR']}/${node}`,
      // The breakers' caps, as the environment sets them (bench/soak.ts turns them off: its load is thousands of recoveries an hour).
      ...Object.fromEntries(BREAKER_SETTINGS.filter(([env]) => process.env[env] !== undefined).map(([env, key]) => [key, process.env[env]])),
      // FLEET_ENROL_URL: breaker slots through the receiver, as an enrolled agent takes them.
      ...(process.env['FLEET_ENROL_URL'] ? { enrolUrl: process.env['FLEET_ENROL_URL'] } : {}),
    });
    const agent = createNodeAgent({ config, registry, log });
    agent.consumer.onFinished((id, outcome) => say(`${outcome === 'completed' ? 'DONE' : 'FAILED'} ${node} ${id}`));
    // Reconnections after a Redis restart: when each agent's command connection is back (epoch ms).
    agent.store.connection.on('ready', () => say(`UP ${node} ${Date.now()}`));
    workers.push({ ready: () => agent.consumer.ready(), close: () => agent.close() });
  } else {
    const w = new Worker(
      nodeQueueName(node),
      async () => {
        // FLEET_WORK_MS: CPU the processor spends per job (a real processor's work; bench/job-lifecycle.ts).
        const until = performance.now() + workMs;
        while (performance.now() < until) {
          /* busy on purpose */
        }
        say(`RAN ${node}`);
        return { ok: true };
      },
      {
        connection: clusterNodes
          ? new Cluster(
              clusterNodes.split(',').map((hp) => ({ host: hp.split(':')[0]!, port: Number(hp.split(':')[1]) })),
              { redisOptions: { maxRetriesPerRequest: null } },
            )
          : ({ url, maxRetriesPerRequest: null } as never),
        prefix,
        concurrency: 1,
      },
    );
    w.on('completed', () => say(`DONE ${node}`));
    w.on('error', () => {});
    workers.push({ ready: () => w.waitUntilReady(), close: () => w.close() });
  }
}
await Promise.all(workers.map((w) => w.ready()));
announce(`READY ${workers.length}`);
process.on('SIGTERM', () => void Promise.all(workers.map((w) => w.close())).then(() => process.exit(0)));
