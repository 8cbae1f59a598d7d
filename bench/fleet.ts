import { spawnSync } from 'node:child_process';
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { startCluster } from '../test/support/redis-topology.ts';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { writeSigningKeys } from '../scripts/lib/signing-keys.ts';
import { alertmanagerBody, nodeNotReadyAlert } from '../test/testkit/payloads.ts';
import { startChild, type Child } from '../test/support/child.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { setTimeout as sleep } from 'node:timers/promises';

// FLEET_PATHS=unenrolled,enrolled: the storm through the receivers' breaker route (issue 48), bench/fleet-paths.ts.
if (process.env['FLEET_PATHS']) await import('./fleet-paths.ts');

/** Where the agents' queues live: one private redis-server, or a 3-master Cluster (FLEET_TOPOLOGY=cluster). */
interface Topo {
  name: 'single' | 'cluster';
  /** What a process needs to connect (REDIS_URL or REDIS_CLUSTER_NODES). */
  env: Record<string, string>;
  /** One admin connection per server (per master on a Cluster): the figures are their sums. */
  admins: Redis[];
  connect(): Redis | Cluster;
  /** Stop and start again (single only): the reconnect storm. */
  restart?: () => Promise<void>;
  destroy(): Promise<void>;
}

const field = (info: string, name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
const sumInfo = async (t: Topo, section: string, name: string): Promise<number> =>
  (await Promise.all(t.admins.map((a) => a.info(section)))).reduce((n, i) => n + field(i, name), 0);
const cpuMs = async (t: Topo): Promise<number> => (await Promise.all(t.admins.map((a) => redisCpu(a)))).reduce((n, c) => n + c.mainMs, 0);

async function startTopo(kind: 'single' | 'cluster', n: number, nofile: number): Promise<Topo> {
  // FLEET_TCP_BACKLOG: Redis's accept queue (its default 511; the kernel caps it at net.core.somaxconn).
  const maxclients = ['--maxclients', String(2 * n + 100), ...(TCP_BACKLOG ? ['--tcp-backlog', TCP_BACKLOG] : [])];
  if (kind === 'cluster') {
    const c = await startCluster(maxclients, { masters: MASTERS });
    const admins = c.nodes.map((node) => new Redis(node.port, node.host).on('error', () => {}));
    return {
      name: 'cluster',
      env: { REDIS_CLUSTER_NODES: c.env },
      admins,
      connect: () => new Cluster(c.nodes, { redisOptions: { maxRetriesPerRequest: null } }),
      destroy: async () => {
        for (const a of admins) a.disconnect();
        c.stop();
      },
    };
  }
  const redis = await startPrivateRedis({ args: maxclients, nofile });
  const admin = new Redis(redis.url);
  admin.on('error', () => {}); // the reconnect storm stops this server on purpose
  return {
    name: 'single',
    env: { REDIS_URL: redis.url },
    admins: [admin],
    connect: () => new Redis(redis.url, { maxRetriesPerRequest: null }),
    restart: async () => {
      await redis.stop();
      await sleep(3_000);
      await redis.start();
    },
    destroy: async () => {
      admin.disconnect();
      await redis.destroy();
    },
  };
}
const TOPOLOGY = process.env['FLEET_TOPOLOGY'] === 'cluster' ? 'cluster' : 'single';
/** FLEET_MASTERS: how many masters the Cluster has (default 3). */
const MASTERS = Number(process.env['FLEET_MASTERS'] ?? 3);
/** FLEET_KINDS: `bare,ours` (default) or one of them. */
const KINDS = (process.env['FLEET_KINDS'] ?? 'bare,ours').split(',').filter((k): k is Kind => k === 'bare' || k === 'ours');

// `npm run bench:fleet` (issue 21): N simulated node agents against one private redis-server on
// loopback, our agents (the real createNodeAgent, many per process, runbooks that do nothing)
// side by side with bare BullMQ workers on the same queues in the same run. For each N: Redis's
// idle CPU, commands, memory and connections per 1,000 agents, then a storm of one job per node
// (ours: Alertmanager webhooks into the real receiver, 50 alerts per request as Alertmanager
// groups them; bare: Queue.add straight into each node's queue): time to all started and all
// done, the receiver's answers (202, 503 + Retry-After which the sender retries, anything else),
// lost and duplicated jobs. FLEET_TOPOLOGY=cluster runs it all against a 3-master Redis Cluster
// (REDIS_CLUSTER_NODES; no reconnect storm there). FLEET_SIZES (default 1000,5000,10000), FLEET_PER_PROCESS (1000), FLEET_KINDS,
// FLEET_IDLE_SECONDS (60: two of an idle worker's 30 s waits). Results: printed, and bench/results/fleet-<time>.json.

const here = (p: string): string => join(dirname(fileURLToPath(import.meta.url)), p);
const SIZES = (process.env['FLEET_SIZES'] ?? '1000,5000,10000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const PER_PROCESS = Number(process.env['FLEET_PER_PROCESS'] ?? 1000);
const IDLE_SECONDS = Number(process.env['FLEET_IDLE_SECONDS'] ?? 60);
const RECONNECT_WAIT_S = Number(process.env['FLEET_RECONNECT_WAIT_S'] ?? 60);
const TCP_BACKLOG = process.env['FLEET_TCP_BACKLOG'];
const STORM_TIMEOUT_MS = Number(process.env['FLEET_STORM_TIMEOUT_S'] ?? 300) * 1000;
/** How long each agents process may take to connect all of its agents (all processes start at once). */
const READY_TIMEOUT_MS = Number(process.env['FLEET_READY_TIMEOUT_S'] ?? 300) * 1000;
const PREFIX = 'fleet';
const keysDir = process.env['SIGNING_KEYS_DIR'] || writeSigningKeys(undefined);
const stateRoot = mkdtempSync(join(tmpdir(), 'vm-fleet-state-'));
const nodeName = (i: number): string => `fleet-${String(i).padStart(5, '0')}`;
const round = (v: number, d = 1): number => Math.round(v * 10 ** d) / 10 ** d;

type Kind = 'bare' | 'ours';

interface Fleet {
  children: Child[];
  ran: Map<string, number>;
  done: Map<string, number>;
  /** Nodes whose job failed (an attempt; ours: a start refused, e.g. a replay after a lapsed lock). */
  failed: Map<string, number>;
  /** Epoch ms of each agent's connection coming back, per node, after startup. */
  up: Map<string, number[]>;
  firstRanAt: number;
  lastRanAt: number;
  lastDoneAt: number;
}

async function startFleet(kind: Kind, n: number, topo: Topo, receiver?: Receiver): Promise<{ fleet: Fleet; readyMs: number }> {
  const fleet: Fleet = { children: [], ran: new Map(), done: new Map(), failed: new Map(), up: new Map(), firstRanAt: 0, lastRanAt: 0, lastDoneAt: 0 };
  const t0 = performance.now();
  for (let from = 0; from < n; from += PER_PROCESS) {
    const c = startChild(
      here('./servers/fleet-agents.ts'),
      {
        FLEET_FROM: String(from),
        FLEET_TO: String(Math.min(n, from + PER_PROCESS)),
        FLEET_KIND: kind,
        ...topo.env,
        QUEUE_PREFIX: PREFIX,
        SIGNING_KEYS_DIR: keysDir,
        STATE_DIR: stateRoot,
        ...(receiver ? { FLEET_ENROL_URL: receiver.url } : {}),
      },
      { execArgv: ['--max-old-space-size=4096'] },
    );
    c.proc.on('message', (m: unknown) => {
      const text = (m as { line?: string }).line ?? '';
      const now = performance.now();
      for (const line of text.split('\n')) {
        const [what, node, at] = line.split(' ');
        if (!node) continue;
        if (what === 'UP') fleet.up.set(node, [...(fleet.up.get(node) ?? []), Number(at)]);
        if (what === 'RAN') {
          fleet.ran.set(node, (fleet.ran.get(node) ?? 0) + 1);
          fleet.firstRanAt ||= now;
          fleet.lastRanAt = now;
        } else if (what === 'DONE') {
          fleet.done.set(node, (fleet.done.get(node) ?? 0) + 1);
          fleet.lastDoneAt = now;
        } else if (what === 'FAILED') {
          fleet.failed.set(node, (fleet.failed.get(node) ?? 0) + 1);
          fleet.lastDoneAt = now;
        }
      }
    });
    fleet.children.push(c);
  }
  await Promise.all(fleet.children.map((c) => c.waitLine('READY', READY_TIMEOUT_MS)));
  return { fleet, readyMs: performance.now() - t0 };
}

interface Idle {
  cpuPctOfCore: number;
  commandsPerSecond: number;
  connections: number;
  /** Clients of each server (each master on a Cluster), this bench's own admin connection left out. */
  perServer: number[];
  /** The same by client name (clientKinds). */
  kinds: Record<string, number>[];
  memoryMiB: number;
}

/** Each server's clients by name, node names folded (`volume-medic:node-agent.*:worker`): who holds the connections. */
const clientKinds = async (t: Topo): Promise<Record<string, number>[]> =>
  Promise.all(
    t.admins.map(async (a) => {
      const kinds: Record<string, number> = {};
      for (const m of String(await a.client('LIST')).matchAll(/ name=(\S*) /g)) {
        const k = m[1]!.replace(/fleet-\d+/g, '*') || '(unnamed)';
        kinds[k] = (kinds[k] ?? 0) + 1;
      }
      return kinds;
    }),
  );

/** Each server's clients (each master's on a Cluster), less this bench's admin connection. */
const clientsPerServer = async (t: Topo): Promise<number[]> => Promise.all(t.admins.map(async (a) => field(await a.info('clients'), 'connected_clients') - 1));

async function idle(topo: Topo, baseMemory: number): Promise<Idle> {
  await sleep(5_000);
  const stat = () => sumInfo(topo, 'stats', 'total_commands_processed');
  const [c0, k0, t0] = [await cpuMs(topo), await stat(), performance.now()];
  await sleep(IDLE_SECONDS * 1000);
  const [c1, k1, t1] = [await cpuMs(topo), await stat(), performance.now()];
  const perServer = await clientsPerServer(topo);
  const memory = await sumInfo(topo, 'memory', 'used_memory');
  const secs = (t1 - t0) / 1000;
  return {
    cpuPctOfCore: round(((c1 - c0) / (t1 - t0)) * 100, 2),
    commandsPerSecond: round((k1 - k0 - 2 * topo.admins.length) / secs, 0),
    connections: perServer.reduce((a, b) => a + b, 0),
    perServer,
    kinds: await clientKinds(topo),
    memoryMiB: round((memory - baseMemory) / 2 ** 20, 1),
  };
}

interface Storm {
  jobs: number;
  allStartedS: number;
  allDoneS: number;
  answers: Record<string, number>;
  lost: number;
  duplicated: number;
  /** Jobs that ended failed, not completed (each ran once: `duplicated` counts a second run). */
  failed: number;
  redisCpuMsPerJob: number;
  /** Redis commands per job during the storm (scripts' own calls included), the largest first. */
  commandsPerJob?: Record<string, number>;
}

/** Commands per job from INFO commandstats (reset before the storm: a private Redis). */
async function commandsPerJob(topo: Topo, jobs: number): Promise<Record<string, number>> {
  const calls = new Map<string, number>();
  for (const info of await Promise.all(topo.admins.map((a) => a.info('commandstats')))) {
    for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) {
      if (m[1]!.startsWith('config') || m[1] === 'info' || m[1]!.startsWith('cluster')) continue;
      calls.set(m[1]!, (calls.get(m[1]!) ?? 0) + Number(m[2]));
    }
  }
  return Object.fromEntries(
    [...calls]
      .map(([k, v]): [string, number] => [k, round(v / jobs, 2)])
      .sort((a, b) => b[1] - a[1])
      .filter(([, v]) => v >= 0.05),
  );
}

async function waitAll(fleet: Fleet, nodes: string[]): Promise<void> {
  const deadline = performance.now() + STORM_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (nodes.every((n) => fleet.done.has(n) || fleet.failed.has(n))) return;
    await sleep(200);
  }
}

function stormResult(fleet: Fleet, nodes: string[], t0: number, answers: Record<string, number>, cpuMs: number): Storm {
  const lost = nodes.filter((n) => !fleet.ran.has(n)).length;
  const duplicated = nodes.filter((n) => (fleet.ran.get(n) ?? 0) > 1).length;
  return {
    jobs: nodes.length,
    allStartedS: lost === 0 ? round((fleet.lastRanAt - t0) / 1000, 2) : Number.NaN,
    allDoneS: nodes.every((n) => fleet.done.has(n) || fleet.failed.has(n)) ? round((fleet.lastDoneAt - t0) / 1000, 2) : Number.NaN,
    answers,
    lost,
    duplicated,
    failed: nodes.filter((n) => fleet.failed.has(n) && !fleet.done.has(n)).length,
    redisCpuMsPerJob: round(cpuMs / nodes.length, 3),
  };
}

async function bareStorm(fleet: Fleet, n: number, topo: Topo): Promise<Storm> {
  const conn = topo.connect();
  const nodes = Array.from({ length: n }, (_, i) => nodeName(i));
  const cpu0 = await cpuMs(topo);
  const t0 = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < nodes.length) {
      const node = nodes[next++]!;
      const q = new Queue(nodeQueueName(node), { connection: conn, prefix: PREFIX, skipVersionCheck: true });
      await q.add('residual-multipath-cleanup', { node }, { jobId: `bare-${node}`, removeOnComplete: { age: 900 } });
      await q.close();
    }
  };
  await Promise.all(Array.from({ length: 20 }, worker));
  await waitAll(fleet, nodes);
  const cpu1 = await cpuMs(topo);
  conn.disconnect();
  return stormResult(fleet, nodes, t0, { added: n }, cpu1 - cpu0);
}

interface Receiver {
  url: string;
  kill(): Promise<unknown>;
}

async function startReceiver(topo: Topo): Promise<Receiver> {
  const c = startChild(
    here('./servers/receiver.ts'),
    { ...topo.env, QUEUE_PREFIX: PREFIX, SIGNING_KEYS_DIR: keysDir, LOG_LEVEL: 'warn' },
    { execArgv: ['--max-old-space-size=384', '--max-semi-space-size=64'] },
  );
  return { url: await c.waitLine('READY'), kill: () => c.kill() };
}

/** ours: through `running` (up since before the agents), or a receiver started for the storm. */
async function ourStorm(fleet: Fleet, n: number, topo: Topo, running?: Receiver): Promise<Storm> {
  const receiver = running ?? (await startReceiver(topo));
  const url = receiver.url;
  const nodes = Array.from({ length: n }, (_, i) => nodeName(i));
  const groups: string[][] = [];
  for (let i = 0; i < nodes.length; i += 50) groups.push(nodes.slice(i, i + 50));
  const answers: Record<string, number> = {};
  const cpu0 = await cpuMs(topo);
  const t0 = performance.now();
  let next = 0;
  // Alertmanager's way: 20 notifications on their way at once; a 503 is retried after its Retry-After.
  const sender = async (): Promise<void> => {
    while (next < groups.length) {
      const g = groups[next++]!;
      const body = JSON.stringify(alertmanagerBody(g.map((node) => nodeNotReadyAlert(node, 'resolved', `fp${node.replace(/[^a-z0-9]/g, '')}`))));
      for (let attempt = 0; attempt < 20; attempt++) {
        const r = await fetch(`${url}/v1/alertmanager`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).catch(() => undefined);
        const status = r ? String(r.status) : 'error';
        answers[status] = (answers[status] ?? 0) + 1;
        await r?.arrayBuffer();
        if (r && r.status < 500) break;
        await sleep(1000 * Number(r?.headers.get('retry-after') ?? 1));
      }
    }
  };
  await Promise.all(Array.from({ length: 20 }, sender));
  await waitAll(fleet, nodes);
  const cpu1 = await cpuMs(topo);
  if (!running) await receiver.kill();
  return stormResult(fleet, nodes, t0, answers, cpu1 - cpu0);
}

interface Reconnect {
  /** Agents whose connection came back within RECONNECT_WAIT_S of the restart. */
  back: number;
  /** Where the time went while they came back: Redis's main thread, the agents' processes (ms of CPU). */
  redisCpuMs: number;
  agentsCpuMs: number;
  /** The kernel's count of connections its accept queues had no room for (all listeners: TcpExt ListenOverflows). */
  listenOverflows: number;
  /** SYN cookies the kernel sent meanwhile (its SYN queue full: TcpExt SyncookiesSent). */
  syncookies: number;
  /** Seconds from Redis answering again until the last agent was back. */
  allBackS: number;
  /** Agents back in each second after Redis answered again. */
  perSecond: number[];
}

/**
 * Redis restarted under the agents: when does each come back? Full jitter spreads them; without
 * it every agent reconnects in the same retry slots.
 */
/** A TcpExt counter from /proc/net/netstat (the machine's, all sockets). */
function tcpExt(name: string): number {
  const lines = readFileSync('/proc/net/netstat', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('TcpExt:'));
  const [names, values] = [lines[0]?.split(' ') ?? [], lines[1]?.split(' ') ?? []];
  return Number(values[names.indexOf(name)] ?? 0);
}
const listenOverflows = (): number => tcpExt('ListenOverflows');
const syncookiesSent = (): number => tcpExt('SyncookiesSent');

async function reconnectStorm(fleet: Fleet, n: number, restart: () => Promise<void>, admin: Redis): Promise<Reconnect> {
  const before = new Map([...fleet.up].map(([k, v]) => [k, v.length]));
  const overflows0 = listenOverflows();
  const cookies0 = syncookiesSent();
  const agents0 = fleet.children.reduce((t, c) => t + c.cpuMs(), 0);
  await restart();
  const t0 = Date.now();
  const deadline = performance.now() + RECONNECT_WAIT_S * 1000;
  const backAt = (): number[] => [...fleet.up].map(([k, v]) => (v.length > (before.get(k) ?? 0) ? v.at(-1)! : Number.NaN)).filter(Number.isFinite);
  while (performance.now() < deadline && backAt().length < n) await sleep(250);
  const at = backAt().map((t) => Math.max(0, t - t0));
  const perSecond = Array.from({ length: Math.ceil(Math.max(0, ...at) / 1000) + 1 }, () => 0);
  for (const t of at) perSecond[Math.floor(t / 1000)]! += 1;
  // The restarted server's CPU since it started: all of it is the reconnect window's.
  const redisCpuMs = round((await redisCpu(admin)).mainMs);
  const agentsCpuMs = round(fleet.children.reduce((t, c) => t + c.cpuMs(), 0) - agents0);
  return {
    back: at.length,
    redisCpuMs,
    agentsCpuMs,
    listenOverflows: listenOverflows() - overflows0,
    syncookies: syncookiesSent() - cookies0,
    allBackS: at.length === n ? round(Math.max(...at) / 1000, 1) : Number.NaN,
    perSecond,
  };
}

interface Row {
  n: number;
  kind: Kind;
  readyS: number;
  idle: Idle;
  storm: Storm;
  /** Clients of each server once every job of the storm started and finished (what starting a job connected). */
  afterStorm: { perServer: number[]; kinds: Record<string, number>[] };
  reconnect?: Reconnect;
}

// Every agent holds two connections (BullMQ's blocking one and its command one), so one Redis
// needs 2N clients and as many open files. This process's hard limit bounds what a redis-server
// started here may open (raising it needs CAP_SYS_RESOURCE).
const hardNofile = Number(spawnSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()) || 1024;
const skipped: string[] = [];
const rows: Row[] = [];
for (const n of SIZES) {
  const files = 2 * n + 200;
  if (TOPOLOGY === 'single' && files > hardNofile) {
    const why = `N=${n}: ${2 * n} agent connections need more open files than this machine's hard limit of ${hardNofile} (ulimit -Hn) for one redis-server; run it on a machine with a higher limit, or spread it over a Redis Cluster`;
    skipped.push(why);
    process.stdout.write(`skipped ${why}\n`);
    continue;
  }
  for (const kind of KINDS) {
    const topo = await startTopo(TOPOLOGY, n, Math.min(hardNofile, files));
    try {
      const base = await sumInfo(topo, 'memory', 'used_memory');
      // On a Cluster our agents take breaker slots through the receiver, as enrolled agents do (their
      // own Redis users may not write the breakers' keys, which sit on another master): it runs
      // from before the agents start, and its own few connections are in the figures.
      const receiver = kind === 'ours' && topo.name === 'cluster' ? await startReceiver(topo) : undefined;
      const { fleet, readyMs } = await startFleet(kind, n, topo, receiver);
      const i = await idle(topo, base);
      await Promise.all(topo.admins.map((a) => a.config('RESETSTAT')));
      const storm = kind === 'bare' ? await bareStorm(fleet, n, topo) : await ourStorm(fleet, n, topo, receiver);
      storm.commandsPerJob = await commandsPerJob(topo, n);
      const afterStorm = { perServer: await clientsPerServer(topo), kinds: await clientKinds(topo) };
      const reconnect = kind === 'ours' && topo.restart ? await reconnectStorm(fleet, n, topo.restart, topo.admins[0]!) : undefined;
      rows.push({ n, kind, readyS: round(readyMs / 1000), idle: i, storm, afterStorm, ...(reconnect ? { reconnect } : {}) });
      process.stdout.write(`${JSON.stringify(rows.at(-1))}\n`);
      await Promise.all(fleet.children.map((c) => c.kill('SIGKILL')));
      await receiver?.kill();
    } finally {
      await topo.destroy();
    }
  }
}

const per1000 = (v: number, n: number): number => round((v / n) * 1000, 2);
process.stdout.write(
  '\n| N | kind | ready s | idle Redis CPU % of a core | per 1,000 agents | commands/s | connections | memory MiB per 1,000 | storm: all started s | all done s | answers | lost | dup | failed | Redis CPU ms/job |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n',
);
for (const r of rows) {
  process.stdout.write(
    `| ${r.n} | ${r.kind} | ${r.readyS} | ${r.idle.cpuPctOfCore} | ${per1000(r.idle.cpuPctOfCore, r.n)} | ${r.idle.commandsPerSecond} | ${r.idle.connections} | ${per1000(r.idle.memoryMiB, r.n)} | ${r.storm.allStartedS} | ${r.storm.allDoneS} | ${Object.entries(
      r.storm.answers,
    )
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')} | ${r.storm.lost} | ${r.storm.duplicated} | ${r.storm.failed} | ${r.storm.redisCpuMsPerJob} |\n`,
  );
}
for (const r of rows) {
  if (r.reconnect)
    process.stdout.write(
      `\nN=${r.n}: Redis restarted under the agents: ${r.reconnect.back} of ${r.n} back, the last ${r.reconnect.allBackS} s after Redis answered; agents back per second: ${r.reconnect.perSecond.join(' ')}; meanwhile Redis spent ${r.reconnect.redisCpuMs} ms of CPU, the agents' processes ${r.reconnect.agentsCpuMs} ms, and the kernel counted ${r.reconnect.listenOverflows} accept-queue overflows and sent ${r.reconnect.syncookies} SYN cookies\n`,
    );
}
// On a Cluster: what each master carries, against the target (about 2 connections per agent, on
// its own queue's master only), and the same per-master costs carried to 50,000 nodes.
for (const r of rows) {
  if (TOPOLOGY !== 'cluster') break;
  const target = (2 * r.n) / MASTERS;
  const most = Math.max(...r.idle.perServer, ...r.afterStorm.perServer);
  const per1000 = (r.idle.cpuPctOfCore / r.n) * 1000;
  process.stdout.write(
    `\nN=${r.n} ${r.kind} on ${MASTERS} masters: connections per master idle ${r.idle.perServer.join(' ')}, after the storm ${r.afterStorm.perServer.join(' ')}; the most ${most} = ${round(most / target, 2)}x of 2N/masters (${round(target, 0)}; at most 1.2x wanted: ${most <= 1.2 * target ? 'met' : 'not met'}); idle Redis CPU ${round(per1000, 3)}% of a core per 1,000 agents; so 50,000 nodes on ${MASTERS} masters: ~${round((most / r.n) * 50_000, 0)} connections and ~${round((per1000 * 50) / MASTERS, 1)}% of a core idle per master, ${round(((r.idle.memoryMiB / r.n) * 50_000) / MASTERS, 0)} MiB of agent keys per master\n`,
  );
}
process.stdout.write('\nours / bare, same N:\n');
for (const n of SIZES) {
  const o = rows.find((r) => r.n === n && r.kind === 'ours');
  const b = rows.find((r) => r.n === n && r.kind === 'bare');
  if (!o || !b) continue;
  process.stdout.write(
    `  N=${n}: idle CPU ${round(o.idle.cpuPctOfCore / b.idle.cpuPctOfCore, 2)}x, idle commands ${round(o.idle.commandsPerSecond / b.idle.commandsPerSecond, 2)}x, memory ${round(o.idle.memoryMiB / b.idle.memoryMiB, 2)}x, storm all done ${round(o.storm.allDoneS / b.storm.allDoneS, 2)}x, Redis CPU per job ${round(o.storm.redisCpuMsPerJob / b.storm.redisCpuMsPerJob, 2)}x\n`,
  );
}
const out = here(`./results/fleet-${TOPOLOGY}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify({ topology: TOPOLOGY, sizes: SIZES, perProcess: PER_PROCESS, idleSeconds: IDLE_SECONDS, hardNofile, skipped, rows }, null, 2),
);
process.stdout.write(`\nwrote ${out}\n`);
process.exit(0);
