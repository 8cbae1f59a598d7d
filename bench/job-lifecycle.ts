import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { writeSigningKeys } from '../scripts/lib/signing-keys.ts';
import { alertmanagerBody, nodeNotReadyAlert } from '../test/testkit/payloads.ts';
import { startChild, type Child } from '../test/support/child.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { callgrindCounter } from './lib/callgrind.ts';
import { setTimeout as sleep } from 'node:timers/promises';

// `npm run bench:lifecycle` (issue 21, job lifecycle cost): what one job costs Redis from enqueue
// to completion, ours against bare BullMQ, in alternating rounds of the same run on one private
// redis-server. Ours: K real node agents (createNodeAgent: seal check, controls, breakers,
// statistics; runbooks that do nothing, bench/servers/fleet-agents.ts) fed by the real receiver
// (Alertmanager webhooks, 50 alerts per request); bare: K bare BullMQ workers (default options,
// no-op processor) fed by Queue.add of a job of the same name and the same data size. Per round
// and kind, one job per node: Redis commands by name (INFO commandstats delta, script-internal
// calls included, as bench:fleet counts them) and Redis's main-thread CPU (INFO cpu), less the idle background of both fleets (measured first,
// pro rata). A second phase per round enqueues the same jobs to queues nobody works (ghost nodes):
// its cost is the enqueue alone, and lifecycle minus enqueue is the workers' side.
// Each round also takes the agents' processes' own CPU per job (from /proc): a Redis whose
// clients answer slower spends more CPU per command (fewer commands per wake-up; on this VM a
// bare worker whose processor spends 2 ms of CPU per job costs Redis ~1.5x a no-op one's, same
// commands), so LIFECYCLE_BARE_WORK_MS (0) makes the bare processor spend that much CPU per job,
// a baseline whose worker is as slow as ours.
// LIFECYCLE_AGENTS (200), LIFECYCLE_ROUNDS (4), LIFECYCLE_IDLE_SECONDS (5), LIFECYCLE_BARE_WORK_MS (0).

const here = (p: string): string => join(dirname(fileURLToPath(import.meta.url)), p);
const K = Number(process.env['LIFECYCLE_AGENTS'] ?? 200);
const ROUNDS = Number(process.env['LIFECYCLE_ROUNDS'] ?? 4);
const IDLE_SECONDS = Number(process.env['LIFECYCLE_IDLE_SECONDS'] ?? 5);
const BARE_WORK_MS = Number(process.env['LIFECYCLE_BARE_WORK_MS'] ?? 0);
/** LIFECYCLE_PROF=<dir>: a V8 CPU profile of every agents' process, in <dir>/ours and <dir>/bare. */
const PROF_DIR = process.env['LIFECYCLE_PROF'];
const PREFIX = 'lc';
const round = (v: number, d = 2): number => Math.round(v * 10 ** d) / 10 ** d;
const name = (kind: string, i: number): string => `lc-${kind}-${String(i).padStart(5, '0')}`;

type Kind = 'ours' | 'bare';

/** Calls and in-command microseconds per command name, and Redis's main-thread CPU. */
interface Snapshot {
  calls: Map<string, number>;
  usec: Map<string, number>;
  cpuMs: number;
  at: number;
}

/**
 * LIFECYCLE_CALLGRIND=1: Redis runs under valgrind (bench/lib/callgrind.ts) and the "CPU" figures
 * are millions of instructions of Redis per job instead of ms: the same on any machine, without
 * the kernel's share and without what sharing 2 cores with the agents costs Redis (see above).
 */
const CALLGRIND = process.env['LIFECYCLE_CALLGRIND'] === '1';
const CPU = CALLGRIND ? 'M instructions of Redis' : 'ms Redis CPU';
const outDir = CALLGRIND ? mkdtempSync(join(tmpdir(), 'vm-lifecycle-callgrind-')) : undefined;
const redis = await startPrivateRedis({ args: ['--maxclients', String(4 * K + 200)], ...(outDir ? { callgrind: { outDir } } : {}) });
const counter = outDir ? callgrindCounter(redis.pid()!, outDir) : undefined;
const admin = new Redis(redis.url);
/** The admin connection's own calls are not the jobs': left out by name. */
const OWN = /^(info|config\||config$|client\||hello|select|ping)/;
async function snapshot(): Promise<Snapshot> {
  const [cmd, cpu] = [await admin.info('commandstats'), await redisCpu(admin)];
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const m of cmd.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+),usec=(\d+)/gm)) {
    if (OWN.test(m[1]!)) continue;
    calls.set(m[1]!, Number(m[2]));
    usec.set(m[1]!, Number(m[3]));
  }
  return { calls, usec, cpuMs: counter ? counter.total() / 1e6 : cpu.mainMs, at: performance.now() };
}

/** Per job figures of one phase: b - a, less `background` per ms of the phase, divided by jobs. */
interface Cost {
  calls: Record<string, number>;
  usec: Record<string, number>;
  commands: number;
  cpuMs: number;
  /** The agents' processes' own CPU (all their threads, /proc, 10 ms ticks), ms per job. */
  agentCpuMs?: number;
}
function cost(a: Snapshot, b: Snapshot, jobs: number, background?: Cost): Cost {
  const ms = b.at - a.at;
  const per = (x: number, bg = 0): number => (x - bg * ms) / jobs;
  const calls: Record<string, number> = {};
  const usec: Record<string, number> = {};
  for (const [k, v] of b.calls) {
    const d = per(v - (a.calls.get(k) ?? 0), background?.calls[k]);
    if (Math.abs(d) > 1e-9) calls[k] = d;
    usec[k] = per((b.usec.get(k) ?? 0) - (a.usec.get(k) ?? 0), background?.usec[k]);
  }
  return {
    calls,
    usec,
    commands: Object.values(calls).reduce((n, v) => n + v, 0),
    cpuMs: per(b.cpuMs - a.cpuMs, background?.cpuMs),
  };
}
function add(into: Cost, c: Cost, weight: number): void {
  for (const [k, v] of Object.entries(c.calls)) into.calls[k] = (into.calls[k] ?? 0) + v * weight;
  for (const [k, v] of Object.entries(c.usec)) into.usec[k] = (into.usec[k] ?? 0) + v * weight;
  into.commands += c.commands * weight;
  into.cpuMs += c.cpuMs * weight;
  into.agentCpuMs = (into.agentCpuMs ?? 0) + (c.agentCpuMs ?? 0) * weight;
}
const zero = (): Cost => ({ calls: {}, usec: {}, commands: 0, cpuMs: 0 });

// --- the two fleets and the receiver -----------------------------------------------------------

const keysDir = process.env['SIGNING_KEYS_DIR'] || writeSigningKeys(undefined);
const stateRoot = mkdtempSync(join(tmpdir(), 'vm-lifecycle-state-'));
const done = new Map<string, number>();
function startAgents(kind: Kind): Child[] {
  const children: Child[] = [];
  for (let from = 0; from < K; from += 500) {
    const c = startChild(
      here('./servers/fleet-agents.ts'),
      {
        FLEET_FROM: String(from),
        FLEET_TO: String(Math.min(K, from + 500)),
        FLEET_KIND: kind,
        FLEET_NAME: `lc-${kind}`,
        FLEET_WORK_MS: kind === 'bare' ? String(BARE_WORK_MS) : '0',
        REDIS_URL: redis.url,
        QUEUE_PREFIX: PREFIX,
        SIGNING_KEYS_DIR: keysDir,
        STATE_DIR: stateRoot,
      },
      PROF_DIR ? { execArgv: ['--cpu-prof', `--cpu-prof-dir=${PROF_DIR}/${kind}`] } : {},
    );
    c.proc.on('message', (m: unknown) => {
      for (const line of ((m as { line?: string }).line ?? '').split('\n')) {
        const [what, node] = line.split(' ');
        if (what === 'DONE' && node) done.set(node, (done.get(node) ?? 0) + 1);
      }
    });
    children.push(c);
  }
  return children;
}
const fleets: Record<Kind, Child[]> = { ours: startAgents('ours'), bare: startAgents('bare') };
const children = [...fleets.ours, ...fleets.bare];
const agentCpuMs = (kind: Kind): number => fleets[kind].reduce((n, c) => n + c.cpuMs(), 0);
const receiver = startChild(here('./servers/receiver.ts'), {
  REDIS_URL: redis.url,
  QUEUE_PREFIX: PREFIX,
  SIGNING_KEYS_DIR: keysDir,
  LOG_LEVEL: 'warn',
});
const url = await receiver.waitLine('READY');
await Promise.all(children.map((c) => c.waitLine('READY', 300_000)));

const producer = new Redis(redis.url, { maxRetriesPerRequest: null });
const bareQueues = new Map<string, Queue>();
const bareQueue = (node: string): Queue => {
  let q = bareQueues.get(node);
  if (!q) bareQueues.set(node, (q = new Queue(nodeQueueName(node), { connection: producer, prefix: PREFIX, skipVersionCheck: true })));
  return q;
};

/** Our jobs: Alertmanager's way, 50 alerts a request, 20 requests at once, each round's alerts new (fingerprint + startsAt). */
async function enqueueOurs(nodes: string[], r: number): Promise<void> {
  const groups: string[][] = [];
  for (let i = 0; i < nodes.length; i += 50) groups.push(nodes.slice(i, i + 50));
  let next = 0;
  const sender = async (): Promise<void> => {
    while (next < groups.length) {
      const g = groups[next++]!;
      const alerts = g.map((node) => ({
        ...nodeNotReadyAlert(node, 'resolved', `fp${r}${node.replace(/[^a-z0-9]/g, '')}`),
        startsAt: new Date(Date.UTC(2026, 11, 1, 3, 0, r)).toISOString(),
      }));
      const res = await fetch(`${url}/v1/alertmanager`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(alertmanagerBody(alerts)),
      });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`receiver answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: 20 }, sender));
}

/** Filled after the first round: the size of our job's data, so the bare job carries as much. */
let padTo = 0;
async function enqueueBare(nodes: string[], r: number): Promise<void> {
  let next = 0;
  const adder = async (): Promise<void> => {
    while (next < nodes.length) {
      const node = nodes[next++]!;
      const base = { node, pad: '' };
      const data = { ...base, pad: 'x'.repeat(Math.max(0, padTo - JSON.stringify(base).length)) };
      await bareQueue(node).add('residual-multipath-cleanup', data, { jobId: `bare-${r}-${node}`, removeOnComplete: { age: 900 } });
    }
  };
  await Promise.all(Array.from({ length: 20 }, adder));
}

async function waitDone(nodes: string[], before: Map<string, number>): Promise<void> {
  const deadline = performance.now() + 120_000;
  while (!nodes.every((n) => (done.get(n) ?? 0) > (before.get(n) ?? 0))) {
    if (performance.now() > deadline) throw new Error(`${nodes.filter((n) => (done.get(n) ?? 0) <= (before.get(n) ?? 0)).length} jobs not done within 120 s`);
    await sleep(50);
  }
  // Let the last DONE's own writes land (the IPC batch is every 100 ms; a job's writes precede it).
  await sleep(150);
}

const nodesOf = (kind: string): string[] => Array.from({ length: K }, (_, i) => name(kind, i));
async function phase(kind: Kind, r: number, worked: boolean, background?: Cost): Promise<Cost> {
  const nodes = nodesOf(worked ? kind : `ghost-${kind}`);
  const before = new Map(done);
  const a = await snapshot();
  const agents0 = agentCpuMs(kind);
  if (kind === 'ours') await enqueueOurs(nodes, r);
  else await enqueueBare(nodes, r);
  if (worked) await waitDone(nodes, before);
  const b = await snapshot();
  return { ...cost(a, b, nodes.length, background), agentCpuMs: (agentCpuMs(kind) - agents0) / nodes.length };
}

// Warm-up: scripts loaded, queue objects made, the receiver's JIT warm; then our job's data size.
await phase('ours', 0, true);
const sample = await new Queue(nodeQueueName(name('ours', 0)), { connection: producer, prefix: PREFIX, skipVersionCheck: true }).getJobs(['completed'], 0, 0);
padTo = JSON.stringify(sample[0]?.data ?? {}).length;
await phase('bare', 0, true);
await phase('ours', 0, false);
await phase('bare', 0, false);

// The idle background of both fleets (BullMQ's blocking waits and stalled checks), per ms.
const i0 = await snapshot();
await sleep(IDLE_SECONDS * 1000);
const i1 = await snapshot();
const background = cost(i0, i1, 1);
const perMs = (c: Cost, ms: number): Cost => ({
  calls: Object.fromEntries(Object.entries(c.calls).map(([k, v]) => [k, v / ms])),
  usec: Object.fromEntries(Object.entries(c.usec).map(([k, v]) => [k, v / ms])),
  commands: c.commands / ms,
  cpuMs: c.cpuMs / ms,
});
const bg = perMs(background, i1.at - i0.at);

const totals: Record<Kind, { life: Cost; enqueue: Cost }> = {
  ours: { life: zero(), enqueue: zero() },
  bare: { life: zero(), enqueue: zero() },
};
const perRound: { round: number; kind: Kind; commands: number; cpuMs: number }[] = [];
for (let r = 1; r <= ROUNDS; r++) {
  // Alternate which kind goes first, so neither always follows the other's garbage.
  for (const kind of (r % 2 ? ['ours', 'bare'] : ['bare', 'ours']) as Kind[]) {
    const life = await phase(kind, r, true, bg);
    const enq = await phase(kind, r, false, bg);
    add(totals[kind].life, life, 1 / ROUNDS);
    add(totals[kind].enqueue, enq, 1 / ROUNDS);
    perRound.push({ round: r, kind, commands: round(life.commands), cpuMs: round(life.cpuMs, 3) });
    process.stdout.write(
      `round ${r} ${kind}: ${round(life.commands)} commands/job, ${round(life.cpuMs, 3)} ${CPU}/job; enqueue alone ${round(enq.commands)} commands, ${round(enq.cpuMs, 3)}\n`,
    );
  }
}

const o = totals.ours;
const b = totals.bare;
const minus = (x: Cost, y: Cost): Cost => {
  const c = zero();
  add(c, x, 1);
  add(c, y, -1);
  return c;
};
const oWork = minus(o.life, o.enqueue);
const bWork = minus(b.life, b.enqueue);
const line = (what: string, x: Cost, y: Cost): string =>
  `| ${what} | ${round(x.commands, 1)} / ${round(y.commands, 1)} (${round(x.commands / y.commands)}x) | ${round(x.cpuMs, 3)} / ${round(y.cpuMs, 3)} (${round(x.cpuMs / y.cpuMs)}x) |\n`;
process.stdout.write(
  `\n${K} agents of each kind, ${ROUNDS} rounds, job data ${padTo} bytes, bare processor's work ${BARE_WORK_MS} ms; ours / bare, per job:\n\n`,
);
process.stdout.write(`| phase | commands (scripts' calls included) | ${CPU} |\n| --- | --- | --- |\n`);
process.stdout.write(line('enqueue to completion', o.life, b.life));
process.stdout.write(line('enqueue alone', o.enqueue, b.enqueue));
process.stdout.write(line("workers' side (difference)", oWork, bWork));
process.stdout.write(
  `\nthe agents' processes' own CPU per job (worked rounds): ours ${round(o.life.agentCpuMs ?? 0, 2)} ms, bare ${round(b.life.agentCpuMs ?? 0, 2)} ms\n`,
);
process.stdout.write(
  "\nper command, whole lifecycle (calls per job ours / bare, difference; in-command us per job ours / bare: Redis's own timer, wall time inside the command, inflated whenever the machine preempts Redis: a hint, not CPU):\n\n| command | ours | bare | ours - bare | us ours | us bare |\n| --- | --- | --- | --- | --- | --- |\n",
);
const names = [...new Set([...Object.keys(o.life.calls), ...Object.keys(b.life.calls)])];
const rows = names
  .map((k) => ({ k, o: o.life.calls[k] ?? 0, b: b.life.calls[k] ?? 0, uo: o.life.usec[k] ?? 0, ub: b.life.usec[k] ?? 0 }))
  .filter((x) => Math.abs(x.o) >= 0.02 || Math.abs(x.b) >= 0.02)
  .sort((x, y) => Math.abs(y.o - y.b) - Math.abs(x.o - x.b) || y.o - x.o);
for (const x of rows) process.stdout.write(`| ${x.k} | ${round(x.o)} | ${round(x.b)} | ${round(x.o - x.b)} | ${round(x.uo, 1)} | ${round(x.ub, 1)} |\n`);
// Medians of the rounds too: BullMQ's stalled-job checks of all workers come in bursts (every
// 30 s per worker, started together), which the pro-rata background cannot take out of the one
// round they land in.
const median = (xs: number[]): number => {
  const v = [...xs].sort((x, y) => x - y);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
const med = (kind: Kind, f: 'cpuMs' | 'commands'): number => median(perRound.filter((x) => x.kind === kind).map((x) => x[f]));
process.stdout.write(
  `\n${CPU} per job, ours / bare: ${round(o.life.cpuMs / b.life.cpuMs)}x (target <= 1.2x); commands ${round(o.life.commands / b.life.commands)}x\n`,
);
process.stdout.write(
  `medians of the rounds: ${CPU} ${round(med('ours', 'cpuMs'), 3)} / ${round(med('bare', 'cpuMs'), 3)} = ${round(med('ours', 'cpuMs') / med('bare', 'cpuMs'))}x; commands ${round(med('ours', 'commands'), 1)} / ${round(med('bare', 'commands'), 1)} = ${round(med('ours', 'commands') / med('bare', 'commands'))}x\n`,
);

// One more round per kind with every command in the slow log (its own cost, hence outside the
// figures above): Redis time per job by script (BullMQ's by name) and by command.
const shaNames = new Map<string, string>();
{
  const q = bareQueue(name('bare', 0));
  const client = (await q.client) as unknown as { scriptsSet?: Record<string, { sha: string }> };
  for (const [n, sc] of Object.entries(client.scriptsSet ?? {})) shaNames.set(sc.sha, n);
}
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.config('SET', 'slowlog-max-len', String(200 * K));
const scripts: Record<Kind, Record<string, { calls: number; us: number }>> = { ours: {}, bare: {} };
for (const kind of ['ours', 'bare'] as Kind[]) {
  await admin.slowlog('RESET');
  await phase(kind, ROUNDS + 1, true);
  const log = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
  for (const [, , us, args] of log) {
    const cmd = String(args[0] ?? '').toLowerCase();
    if (OWN.test(cmd) || cmd === 'slowlog') continue;
    const label =
      cmd === 'evalsha'
        ? `evalsha ${shaNames.get(String(args[1])) ?? String(args[1]).slice(0, 8)}`
        : cmd === 'eval'
          ? `eval ${String(args[1]).replace(/\s+/g, ' ').slice(0, 40)}`
          : cmd;
    const e = (scripts[kind][label] ??= { calls: 0, us: 0 });
    e.calls += 1 / K;
    e.us += us / K;
  }
}
await admin.config('SET', 'slowlog-log-slower-than', '10000');
process.stdout.write(
  '\nslow-log round (every command logged; top-level only), per job: calls and Redis us\n\n| command or script | ours calls | ours us | bare calls | bare us |\n| --- | --- | --- | --- | --- |\n',
);
const labels = [...new Set([...Object.keys(scripts.ours), ...Object.keys(scripts.bare)])].sort(
  (x, y) => (scripts.ours[y]?.us ?? 0) + (scripts.bare[y]?.us ?? 0) - (scripts.ours[x]?.us ?? 0) - (scripts.bare[x]?.us ?? 0),
);
for (const l of labels)
  process.stdout.write(
    `| ${l} | ${round(scripts.ours[l]?.calls ?? 0)} | ${round(scripts.ours[l]?.us ?? 0, 1)} | ${round(scripts.bare[l]?.calls ?? 0)} | ${round(scripts.bare[l]?.us ?? 0, 1)} |\n`,
  );

const out = here(`./results/lifecycle-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      unit: CPU,
      agents: K,
      rounds: ROUNDS,
      dataBytes: padTo,
      bareWorkMs: BARE_WORK_MS,
      background: bg,
      perRound,
      scripts,
      ours: { ...o, workers: oWork },
      bare: { ...b, workers: bWork },
    },
    null,
    2,
  ),
);
process.stdout.write(`wrote ${out}\n`);
await receiver.kill();
// A profiled agent writes its profile on a clean exit (SIGTERM: its workers close first).
await Promise.all(children.map((c) => c.kill(PROF_DIR ? 'SIGTERM' : 'SIGKILL')));
producer.disconnect();
admin.disconnect();
await redis.destroy();
if (outDir) rmSync(outDir, { recursive: true, force: true });
process.exit(0);
