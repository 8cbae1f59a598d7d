import { Worker } from 'bullmq';
import { nothingToDo } from '../../test/support/stub-result.ts';
import { breakerSettingsFromEnv } from './breaker-env.ts';
import { Cluster } from 'ioredis';
import { announce } from '../../test/support/child.ts';
import { configParser } from '../../src/core/config/load.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { RUNBOOKS, type RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../src/core/catalogue/result.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import { enrolUntilDone, type EnrolledKeys } from '../../workers/engine/enrolled-keys.ts';
import { receiverAgent } from '../../workers/engine/receiver-http.ts';
import { globalAgent } from 'node:https';
import { http } from '../../src/adapters/http/node-http.ts';
import type { Agent } from 'node:http';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../../workers/engine/registry.ts';

// Many simulated node agents in one process, for bench/fleet.ts. FLEET_KIND=ours: the real
// createNodeAgent per node (its BullMQ worker, seal checks, controls, statistics: the same code
// and the same two connections per agent as a DaemonSet pod), whose runbooks do nothing (no host).
// FLEET_KIND=bare: a bare BullMQ Worker per node queue with a no-op processor, the baseline.
// FLEET_ENROL_URLS (bench/fleet-paths.ts, issue 48): each of ours enrols first, as the chart runs
// it: with the receiver replica at index i % count, its token from FLEET_TOKENS_DIR/<node>, the
// receivers' CA (ENROL_CA_FILE), then holds its own Redis user and takes its breaker slots through
// that replica over HTTPS (the real ReceiverBreakers), verifying controls with CONTROL_VERIFY_CERT_FILE.
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

// FLEET_HEAP_EVERY_MS (the soak, with --expose-gc): `HEAP <epoch ms> <bytes>`, the heap still live
// after a full collection, every so often: the leak measure of a process whose RSS steps with
// reconnection storms (V8 keeps the pages it grew into).
const heapEvery = Number(process.env['FLEET_HEAP_EVERY_MS'] ?? 0);
const gc = (globalThis as { gc?: () => void }).gc;
if (heapEvery > 0 && gc)
  setInterval(() => {
    gc();
    say(`HEAP ${Date.now()} ${process.memoryUsage().heapUsed}`);
  }, heapEvery).unref();

const log = createLogger('fleet-agent', 'warn');
/** FLEET_DESTRUCTIVE_STEPS (bench/fleet-paths.ts): each job passes this many destructive steps' gates (their breaker slots), in enforce. */
const destructiveSteps = Number(process.env['FLEET_DESTRUCTIVE_STEPS'] ?? 0);
const stub =
  (runbook: RunbookName): RunbookHandler<RunbookName> =>
  async (_job: unknown, ctx: RunbookContext): Promise<RunbookResult> => {
    say(`RAN ${ctx.ranOn} ${ctx.jobId} ${Date.now()}`);
    for (let k = 0; k < destructiveSteps; k++) {
      const step = { id: `stand-in:${k}`, description: 'fleet stand-in', destructive: true };
      const d = await ctx.gate?.beforeStep(step, { summary: 'fleet stand-in', steps: [step] });
      if (d && !d.go) throw new Error(`stand-in step ${k} held: ${d.park.why}`);
    }
    return nothingToDo(runbook, ctx, 'fleet stand-in');
  };
const registry = Object.fromEntries(RUNBOOKS.map((r) => [r, stub(r)])) as RunbookRegistry;

/** What each simulated agent is to this process: ready when waiting for jobs, closed at the end. */
const workers: { ready(): Promise<unknown>; close(): Promise<unknown> }[] = [];
// One schema for every simulated agent of this process (building it costs ~2 ms).
const configs = configParser('node-agent');
const enrolUrls = process.env['FLEET_ENROL_URLS']?.split(',').filter(Boolean) ?? [];
const enrolCa = process.env['ENROL_CA_FILE'];
const controlCert = process.env['CONTROL_VERIFY_CERT_FILE'];
/**
 * Each node's enrolment, FLEET_ENROL_CONCURRENCY (8) at a time per process: every simulated pod asks
 * from 127.0.0.1, and the receiver charges an enrolment to its address's failed-auth budget
 * (AUTH_FAILURES_PER_MINUTE, 20) until it is answered; real pods each have their own address.
 */
const enrolments = new Map<number, EnrolledKeys>();
/**
 * Each simulated node's connections to its receiver, as each agent process has its own:
 * FLEET_RECEIVER_LINK=kept (receiverAgent, what an agent runs) or global (Node's global agent,
 * what agents ran before issue 48: a connection kept 5 s at most).
 */
const links = new Map<number, Agent>();
const linkOf = (i: number): Agent => {
  const https = enrolUrls[i % enrolUrls.length]!.startsWith('https:');
  let a = links.get(i);
  if (!a) {
    const global = https ? globalAgent : http.globalAgent;
    links.set(i, (a = process.env['FLEET_RECEIVER_LINK'] === 'global' ? global : receiverAgent(https ? 'https:' : 'http:')));
  }
  return a;
};
if (kind === 'ours' && enrolUrls.length > 0) {
  // enrolUntilDone's retry waits do not hold the process open (an agent's probes do); this does meanwhile.
  const hold = setInterval(() => {}, 1_000);
  let next = from;
  const one = async (): Promise<void> => {
    for (let i = next++; i < to; i = next++) {
      const node = nodeName(i);
      enrolments.set(
        i,
        await enrolUntilDone({
          target: {
            url: enrolUrls[i % enrolUrls.length]!,
            tokenFile: `${process.env['FLEET_TOKENS_DIR']}/${node}`,
            ...(enrolCa ? { caFile: enrolCa } : {}),
            agent: linkOf(i),
          },
          request: { as: 'node-agent', node },
          log,
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: Number(process.env['FLEET_ENROL_CONCURRENCY'] ?? 8) }, one));
  clearInterval(hold);
}
for (let i = from; i < to; i++) {
  const node = nodeName(i);
  if (kind === 'ours') {
    const enrolled = enrolments.get(i);
    const user = enrolled?.redis();
    const config = configs({
      ...(clusterNodes
        ? { redisClusterNodes: clusterNodes.split(',') }
        : sentinels
          ? { redisSentinels: sentinels.split(','), redisSentinelName: process.env['REDIS_SENTINEL_NAME'] }
          : { redisUrl: url }),
      queuePrefix: prefix,
      nodeName: node,
      logLevel: 'warn',
      stateDir: `${process.env['STATE_DIR']}/${node}`,
      ...(destructiveSteps > 0 ? { defaultMode: 'enforce' } : {}),
      ...(controlCert ? { controlVerifyCertFile: controlCert } : {}),
      // The breakers' caps, as the environment sets them (bench/soak.ts turns them off: its load is thousands of recoveries an hour).
      ...breakerSettingsFromEnv(),
      ...(enrolled
        ? {
            enrolUrl: enrolUrls[i % enrolUrls.length],
            ...(enrolCa ? { enrolCaFile: enrolCa } : {}),
            ...(user ? { redisUsername: user.username, redisPassword: user.password } : {}),
          }
        : {
            signingKeysDir: process.env['SIGNING_KEYS_DIR'],
            // FLEET_ENROL_URL: breaker slots through the receiver, as an enrolled agent takes them.
            ...(process.env['FLEET_ENROL_URL'] ? { enrolUrl: process.env['FLEET_ENROL_URL'] } : {}),
          }),
    });
    const agent = createNodeAgent({ config, registry, log, ...(enrolled ? { enrolled, receiverAgent: linkOf(i) } : {}) });
    agent.consumer.onFinished((id, outcome) => say(`${outcome === 'completed' ? 'DONE' : 'FAILED'} ${node} ${id}`));
    // Reconnections after a Redis restart: when each agent's command connection is back (epoch ms).
    agent.store.connection.on('ready', () => say(`UP ${node} ${Date.now()}`));
    workers.push({
      ready: () => agent.consumer.ready(),
      close: async () => {
        enrolled?.close();
        await agent.close();
      },
    });
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
// Profiled (FLEET_AGENT_PROF, bench/fleet-paths.ts): exit at once, which writes the profile (closing 1,000 agents takes longer than the parent waits).
process.on('SIGTERM', () => (process.env['FLEET_AGENT_PROF'] ? process.exit(0) : void Promise.all(workers.map((w) => w.close())).then(() => process.exit(0))));
