import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execSync } from 'node:child_process';
import { AgentStore } from '../src/adapters/jobstore/agent-store.ts';
import { Dispatcher } from '../src/adapters/jobstore/dispatcher.ts';
import { KubeCoordination } from '../src/adapters/kube/kube-coordination.ts';
import { JobEventRecorder } from '../src/adapters/kube/job-events.ts';
import { restApis } from '../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../src/adapters/kube/rest/transport.ts';
import { createLogger } from '../src/adapters/observability/logger.ts';
import { producerConnection } from '../src/adapters/redis/redis.ts';
import type { LocalPvPlaceholderJob, RunbookName } from '../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import type { RunbookResult } from '../src/core/catalogue/result.ts';
import type { RunbookRegistry } from '../workers/engine/registry.ts';
import { runRunbook } from '../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../workers/engine/runbook.ts';
import { createRunbookWorker } from '../workers/engine/runbook-worker.ts';
import { FakeHost } from '../test/testkit/fake-host.ts';
import { startChild } from '../test/support/child.ts';
import { testSealer } from '../test/support/trust.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { median, percentile, round } from './lib/stats.ts';

// `npm run bench:kube` (issue 47: Events and coordination must not slow job starts): one node's
// runbook worker runs KUBE_JOBS jobs of one destructive step each, in alternating rounds, without
// Kubernetes access (`off`), with its Events written to the fake API server (`events`), and with
// the coordination check before the step too (`events+coordination`: kured's lock, the Node, the
// medik8s remediations). Per round: wall time from enqueue to the last finished, time from enqueue to
// each job's start (p50/p99), the API requests per job. The fake API server answers in this
// process, so its time counts against `on`: an upper bound of what the cluster's own latency
// would add (a real API server answers from another machine, in ~1-5 ms). Events are sent
// without holding the job (fire and forget); the coordination reads are on the step's path by
// design (fresh evidence before a destructive step). KUBE_JOBS (300), KUBE_ROUNDS (4).

const here = (p: string): string => join(dirname(fileURLToPath(import.meta.url)), p);
const N = Number(process.env['KUBE_JOBS'] ?? 300);
const ROUNDS = Number(process.env['KUBE_ROUNDS'] ?? 4);
const NODE = 'bench-node';
const silent = createLogger('bench', 'silent');

type Step = PlannedStep & { file: string };
const toy: RunbookDefinition<'local-pv-placeholder', object, Step> = {
  runbook: 'local-pv-placeholder',
  observe: async () => ({}),
  plan: () => ({
    kind: 'steps',
    summary: 'one step',
    steps: [
      {
        id: 'touch:b',
        description: 'touch b',
        destructive: true,
        file: '/work/b',
        evidence: [{ claim: 'b is ours', source: 'bench', observedAt: new Date().toISOString(), status: 'holds' }],
      },
    ],
  }),
  steps: {
    isDone: async () => false,
    apply: async () => {},
  },
  verify: async () => ({ ok: true, checks: [{ what: 'toy', ok: true }] }),
};

const redis = await startPrivateRedis();
const fake = startChild(here('./servers/fake-kube.ts'), { KUBE_NODE: NODE });
const rest = new KubeRest({ server: await fake.waitLine('URL '), token: () => 'bench-token' });
let requests = 0;
const events = restApis(rest).events;
/** `f`, counted in `requests`. */
function counted<A extends unknown[], R>(f: (...a: A) => R): (...a: A) => R {
  return (...a) => {
    requests++;
    return f(...a);
  };
}
const countedEvents: typeof events = {
  ...events,
  createNamespacedEvent: counted((p) => events.createNamespacedEvent(p)),
  patchNamespacedEvent: counted((p) => events.patchNamespacedEvent(p)),
  readNamespacedEvent: counted((p) => events.readNamespacedEvent(p)),
};

type Kind = 'off' | 'events' | 'events+coordination';

async function runRound(kind: Kind, r: number): Promise<Record<string, number | string>> {
  const prefix = `kc${r}${kind.replace(/[^a-z]/g, '')}`;
  const conn = producerConnection(redis.url);
  const d = new Dispatcher(conn, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), knownKeyMaxMs: 0 });
  const started = new Map<string, number>();
  const finished = new Map<string, number>();
  const host = new FakeHost();
  const registry = {
    'local-pv-placeholder': (j: LocalPvPlaceholderJob, ctx: Parameters<typeof runRunbook>[2]): Promise<RunbookResult> => {
      started.set(j.key, performance.now());
      return runRunbook(toy, j, ctx, { host, stateDir: '/state' }).finally(() => finished.set(j.key, performance.now()));
    },
  } as unknown as RunbookRegistry;
  const requestsBefore = requests;
  const worker = createRunbookWorker({
    queue: nodeQueueName(NODE),
    store: new AgentStore({ redis: redis.url, process: NODE, prefix, log: silent }),
    ranOn: NODE,
    registry,
    modeOf: (_r: RunbookName) => 'enforce',
    accepts: () => undefined,
    lockDurationMs: 30_000,
    log: silent,
    ...(kind !== 'off' ? { events: new JobEventRecorder({ events: countedEvents, instance: NODE }) } : {}),
    ...(kind === 'events+coordination'
      ? {
          coordination: {
            check: new KubeCoordination({
              get: counted((p: string, q?: Record<string, string | undefined>) => rest.get(p, q)),
              kured: { namespace: 'kube-system', name: 'kured' },
              medik8sNamespaces: [],
            }),
            recheckMs: 30_000,
          },
        }
      : {}),
  });
  const jobs: LocalPvPlaceholderJob[] = Array.from({ length: N }, (_, i) => ({
    version: 1,
    key: `lpv_${prefix}_${String(i).padStart(12, '0')}`,
    runbook: 'local-pv-placeholder',
    action: 'place',
    target: { node: NODE, pv: `pv-${i}`, path: `/dev/disk/by-id/wwn-0x5000c500a1b2${String(i).padStart(4, '0')}` },
    evidence: [{ source: 'api', summary: 'bench', raw: {} }],
  }));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await d.enqueue(jobs);
  for (let waited = 0; finished.size < N; waited += 20) {
    if (waited > 60_000) throw new Error(`${kind} round ${r}: ${finished.size} of ${N} jobs finished in 60 s`);
    await new Promise((res) => setTimeout(res, 20));
  }
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  // Events are fire and forget: let the last ones arrive before counting requests.
  await new Promise((res) => setTimeout(res, 500));
  await worker.close();
  await d.close();
  conn.disconnect();
  const toStart = [...started.values()].map((t) => t - t0).sort((a, b) => a - b);
  return {
    kind,
    round: r,
    wallMs: round(wall),
    msPerJob: round(wall / N, 2),
    startP50Ms: round(percentile(toStart, 50)),
    startP99Ms: round(percentile(toStart, 99)),
    cpuMsPerJob: round((cpu.user + cpu.system) / 1000 / N, 3),
    apiRequestsPerJob: round((requests - requestsBefore) / N, 2),
  };
}

const rows: Array<Record<string, number | string>> = [];
const KINDS: Kind[] = (process.env['KUBE_KINDS']?.split(',') as Kind[] | undefined) ?? ['off', 'events', 'events+coordination'];
for (let r = 0; r < ROUNDS; r++) for (const kind of r % 2 === 0 ? KINDS : [...KINDS].reverse()) rows.push(await runRound(kind, r));
await fake.kill();
await redis.stop();

const med = (kind: string, f: string): number => median(rows.filter((x) => x['kind'] === kind).map((x) => Number(x[f])));
const summary = Object.fromEntries(
  KINDS.map((k) => [
    k,
    {
      msPerJob: med(k, 'msPerJob'),
      vsOff: round(med(k, 'msPerJob') / med('off', 'msPerJob'), 3),
      startP99Ms: med(k, 'startP99Ms'),
      cpuMsPerJob: med(k, 'cpuMsPerJob'),
      cpuVsOff: round(med(k, 'cpuMsPerJob') / med('off', 'cpuMsPerJob'), 3),
      apiRequestsPerJob: med(k, 'apiRequestsPerJob'),
    },
  ]),
);
console.table(rows);
console.log(JSON.stringify(summary));
const out = here(`./results/kube-cost-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      at: new Date().toISOString(),
      git: execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim(),
      machine: { cpus: cpus().length, loadavg: loadavg() },
      jobs: N,
      rows,
      summary,
    },
    null,
    2,
  ),
);
console.log(`written ${out}`);
