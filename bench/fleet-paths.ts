import { spawnSync } from 'node:child_process';
import { writeKubeconfig } from '../test/support/kubeconfig-file.ts';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { writeSigningKeys } from '../scripts/lib/signing-keys.ts';
import { Breakers } from '../src/adapters/controls/breakers.ts';
import { alertmanagerBody, nodeNotReadyAlert } from '../test/testkit/payloads.ts';
import { startFakeKubeApi } from '../test/testkit/fake-kube-api.ts';
import { startChild, type Child } from '../test/support/child.ts';
import { writeControlKeys } from '../test/support/control-keys.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { receiverTlsFiles } from '../test/support/receiver-tls-files.ts';
import type { ServerStats } from './lib/server-stats.ts';
import { percentile, round } from './lib/stats.ts';

// `FLEET_PATHS=unenrolled,enrolled npm run bench:fleet` (issue 48): the same webhook storm (one
// job per node, Alertmanager's groups of 50, 20 notifications in flight, spread over the replicas)
// through R receiver replicas (FLEET_RECEIVERS, e.g. 1,2,3; HTTPS, each its own process on one
// private redis-server) to N simulated agents (the real createNodeAgent, stub runbooks), on two
// paths side by side in one run:
//   unenrolled: agents with SIGNING_KEYS_DIR and the default Redis user, breaker slots straight in Redis;
//   enrolled:   agents that enrol with a replica (round-robin: agent i with replica i % R; a fake API
//               server answers the TokenReviews), hold their own Redis users (REDIS_NODE_USERS) and
//               take every breaker slot through that replica over HTTPS, sealed with their work key.
// Per run: time to all started and start p50/p99 (webhook sent to RAN), CPU per job of the receivers
// (sum over replicas), Redis and the agents' processes, breaker asks per second per replica, TLS
// handshakes and connections per ask, and the storm breaker's count of started nodes read back from
// Redis (it must equal the jobs). No idle phase and no reconnect storm (FLEET_KINDS's runs have them).

/** enrolled-unkept: enrolled, with the receiver's and the agents' keep-alive as before issue 48 (Node's 5 s). */
const ALL_PATHS = ['unenrolled', 'enrolled', 'enrolled-unkept'] as const;
type Path = (typeof ALL_PATHS)[number];
const here = (p: string): string => join(dirname(fileURLToPath(import.meta.url)), p);
const SIZES = (process.env['FLEET_SIZES'] ?? '2000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const PATHS = (process.env['FLEET_PATHS'] ?? '').split(',').filter((p): p is Path => (ALL_PATHS as readonly string[]).includes(p));
const REPLICAS = (process.env['FLEET_RECEIVERS'] ?? '1')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const PER_PROCESS = Number(process.env['FLEET_PER_PROCESS'] ?? 1000);
const STORM_TIMEOUT_MS = Number(process.env['FLEET_STORM_TIMEOUT_S'] ?? 300) * 1000;
const READY_TIMEOUT_MS = Number(process.env['FLEET_READY_TIMEOUT_S'] ?? 300) * 1000;
const PREFIX = 'fleet';
const NS = 'volume-medic';

const HARD_NOFILE = Number(spawnSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()) || 1024;
const work = mkdtempSync(join(tmpdir(), 'vm-fleet-paths-'));
const keysDir = writeSigningKeys(undefined);
const control = writeControlKeys();
const tls = receiverTlsFiles(work);
const ca = readFileSync(tls.ca);
/** FLEET_TLS=off: the receivers serve plain HTTP (what TLS costs an ask, measured by difference). */
const TLS = process.env['FLEET_TLS'] !== 'off';
/**
 * FLEET_DESTRUCTIVE_STEPS=<n>: each job takes n destructive steps' gates after its start (in
 * enforce, the breakers' caps off so nothing trips): the slot of each is a Redis script on the
 * unenrolled path and an ask to the receiver on the enrolled one. Default 0: starts only.
 */
const DESTRUCTIVE_STEPS = Number(process.env['FLEET_DESTRUCTIVE_STEPS'] ?? 0);
const BREAKERS_OFF: Record<string, string> =
  DESTRUCTIVE_STEPS > 0 ? { BREAKER_STORM_NODES: '0', BREAKER_NODE_DESTRUCTIVE_PER_HOUR: '0', BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR: '0' } : {};
const nodeName = (i: number): string => `fleet-${String(i).padStart(5, '0')}`;
const most = Math.max(...SIZES);

// The API server's answers to enrolment: one agent pod per node, its token in a file as the kubelet projects it.
const api = await startFakeKubeApi();
const tokens = join(work, 'tokens');
mkdirSync(tokens);
for (let i = 0; i < most; i++) {
  api.addAgentPod(`token-${i}`, { serviceAccount: `${NS}/volume-medic-node-agent`, pod: `agent-${i}`, uid: `uid-${i}`, node: nodeName(i) });
  writeFileSync(join(tokens, nodeName(i)), `token-${i}\n`);
}
const kubeconfig = writeKubeconfig(work, api.url);

interface Replica {
  child: Child;
  url: string;
}

async function startReplicas(count: number, redisUrl: string, path: Path): Promise<Replica[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const child = startChild(
        here('./servers/receiver.ts'),
        {
          REDIS_URL: redisUrl,
          QUEUE_PREFIX: PREFIX,
          SIGNING_KEYS_DIR: keysDir,
          LOG_LEVEL: 'warn',
          ...(TLS ? { TLS_CERT_FILE: tls.cert, TLS_KEY_FILE: tls.key } : {}),
          CONTROL_SIGNING_KEY_FILE: control.keyFile,
          CONTROL_VERIFY_CERT_FILE: control.certFile,
          OPERATOR_AUTH: 'off',
          KUBECONFIG: kubeconfig,
          ENROL_NODE_AGENTS: `${NS}/volume-medic-node-agent`,
          ...(path !== 'unenrolled' ? { REDIS_NODE_USERS: 'true' } : {}),
          ...(path === 'enrolled-unkept' ? { HTTP_KEEP_ALIVE_SECONDS: '5' } : {}),
          ...BREAKERS_OFF,
        },
        {
          execArgv: [
            '--max-old-space-size=384',
            '--max-semi-space-size=64',
            // FLEET_RECEIVER_PROF=<dir>: a CPU profile of each replica (written when it stops), where an ask's time goes.
            ...(process.env['FLEET_RECEIVER_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['FLEET_RECEIVER_PROF']}/${path}`] : []),
          ],
        },
      );
      return { child, url: await child.waitLine('READY', 60_000) };
    }),
  );
}

const statsOf = (c: Child): Promise<ServerStats> =>
  new Promise((resolve) => {
    const on = (m: unknown): void => {
      if (m && typeof m === 'object' && 'stats' in m) {
        c.proc.off('message', on);
        resolve((m as { stats: ServerStats }).stats);
      }
    };
    c.proc.on('message', on);
    c.proc.send('stats');
  });

interface Fleet {
  children: Child[];
  ranAt: Map<string, number[]>;
  finished: Set<string>;
  failed: Set<string>;
}

async function startAgents(n: number, redisUrl: string, path: Path, replicas: Replica[]): Promise<Fleet> {
  const fleet: Fleet = { children: [], ranAt: new Map(), finished: new Set(), failed: new Set() };
  for (let from = 0; from < n; from += PER_PROCESS) {
    const c = startChild(
      here('./servers/fleet-agents.ts'),
      {
        FLEET_FROM: String(from),
        FLEET_TO: String(Math.min(n, from + PER_PROCESS)),
        FLEET_KIND: 'ours',
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: PREFIX,
        STATE_DIR: mkdtempSync(join(work, 'state-')),
        CONTROL_VERIFY_CERT_FILE: control.certFile,
        ...BREAKERS_OFF,
        ...(DESTRUCTIVE_STEPS > 0 ? { FLEET_DESTRUCTIVE_STEPS: String(DESTRUCTIVE_STEPS) } : {}),
        ...(path !== 'unenrolled'
          ? {
              FLEET_ENROL_URLS: replicas.map((r) => r.url).join(','),
              FLEET_TOKENS_DIR: tokens,
              ...(TLS ? { ENROL_CA_FILE: tls.ca } : {}),
              FLEET_RECEIVER_LINK: path === 'enrolled' ? 'kept' : 'global',
            }
          : { SIGNING_KEYS_DIR: keysDir }),
      },
      {
        execArgv: [
          '--max-old-space-size=4096',
          // FLEET_AGENT_PROF=<dir>: a CPU profile of each agents process (written when it stops: SIGTERM at the end).
          ...(process.env['FLEET_AGENT_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['FLEET_AGENT_PROF']}/${path}`] : []),
        ],
      },
    );
    c.proc.on('message', (m: unknown) => {
      for (const line of ((m as { line?: string }).line ?? '').split('\n')) {
        const f = line.split(' ');
        const [what, node] = f;
        // RAN <node> <jobId> <epoch ms>: the time is the last field.
        const at = f.at(-1);
        if (!node) continue;
        if (what === 'RAN') fleet.ranAt.set(node, [...(fleet.ranAt.get(node) ?? []), Number(at)]);
        else if (what === 'DONE') fleet.finished.add(node);
        else if (what === 'FAILED') fleet.failed.add(node);
      }
    });
    fleet.children.push(c);
  }
  await Promise.all(fleet.children.map((c) => c.waitLine('READY', READY_TIMEOUT_MS))).catch((err: Error) => {
    // What the agents logged (warnings and errors) says why one did not get ready.
    for (const c of fleet.children)
      process.stderr.write(
        `${c.lines
          .filter((l) => !l.includes('HTTP 429'))
          .slice(0, 5)
          .join('\n')}\n`,
      );
    throw err;
  });
  return fleet;
}

/** The storm: groups of 50 alerts, 20 notifications in flight, group g to replica g % R; each node's send time. */
async function storm(nodes: string[], replicas: Replica[]): Promise<{ sentAt: Map<string, number>; answers: Record<string, number> }> {
  const agent = TLS ? new Agent({ keepAlive: true, ca }) : new HttpAgent({ keepAlive: true });
  const send = TLS ? request : httpRequest;
  const sentAt = new Map<string, number>();
  const answers: Record<string, number> = {};
  const groups: string[][] = [];
  for (let i = 0; i < nodes.length; i += 50) groups.push(nodes.slice(i, i + 50));
  const post = (url: string, body: string): Promise<{ status: number; retryAfter: number }> =>
    new Promise((resolve) => {
      const r = send(new URL('/v1/alertmanager', url), { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: Number(res.headers['retry-after'] ?? 1) }));
      });
      r.on('error', () => resolve({ status: 0, retryAfter: 1 }));
      r.end(body);
    });
  let next = 0;
  const sender = async (): Promise<void> => {
    for (let g = next++; g < groups.length; g = next++) {
      const group = groups[g]!;
      const body = JSON.stringify(alertmanagerBody(group.map((node) => nodeNotReadyAlert(node, 'resolved', `fp${node.replace(/[^a-z0-9]/g, '')}`))));
      const now = Date.now();
      for (const node of group) sentAt.set(node, now);
      for (let attempt = 0; attempt < 20; attempt++) {
        const r = await post(replicas[g % replicas.length]!.url, body);
        const status = r.status ? String(r.status) : 'error';
        answers[status] = (answers[status] ?? 0) + 1;
        if (r.status && r.status < 500) break;
        await sleep(1000 * r.retryAfter);
      }
    }
  };
  await Promise.all(Array.from({ length: 20 }, sender));
  agent.destroy();
  return { sentAt, answers };
}

interface Row {
  n: number;
  path: Path;
  replicas: number;
  readyS: number;
  allStartedS: number;
  startP50Ms: number;
  startP99Ms: number;
  answers: Record<string, number>;
  lost: number;
  duplicated: number;
  failed: number;
  receiverCpuMsPerJob: number;
  redisCpuMsPerJob: number;
  agentsCpuMsPerJob: number;
  totalCpuMsPerJob: number;
  /** Breaker asks (POST /v1/agents/breakers) per second of the storm, each replica. */
  asksPerSecond: number[];
  /** Per breaker ask, over all replicas: new TCP connections, TLS handshakes, of them resumed. */
  connectionsPerAsk: number;
  handshakesPerAsk: number;
  resumedPerAsk: number;
  /** The storm breaker's recorded count of distinct nodes that started, read back from Redis. */
  stormCount: number;
  /** Dry-run starts the storm breaker did not count (the ask failed), as the agents logged them, and the first reason. */
  uncounted: number;
  uncountedWhy?: string;
  /** Each replica's resident memory after the storm (its kept connections in it). */
  receiverRssMiB: number[];
}

const cpuSum = (cs: Child[]): number => cs.reduce((t, c) => t + c.cpuMs(), 0);

async function run(n: number, path: Path, count: number): Promise<Row> {
  // Two connections per agent (BullMQ's blocking one and its command one), a few per replica. This
  // process's hard open-file limit caps one redis-server (LAB-NOTES: 20,000 here and on the device
  // machine, so about 9,900 agents on one Redis).
  const redis = await startPrivateRedis({ args: ['--maxclients', String(2 * n + 200)], nofile: Math.min(HARD_NOFILE, 2 * n + 400) });
  const admin = new Redis(redis.url);
  const replicas = await startReplicas(count, redis.url, path);
  try {
    const t0Ready = performance.now();
    const fleet = await startAgents(n, redis.url, path, replicas);
    const readyS = round((performance.now() - t0Ready) / 1000, 1);
    await sleep(2_000);
    const nodes = Array.from({ length: n }, (_, i) => nodeName(i));
    const stats0 = await Promise.all(replicas.map((r) => statsOf(r.child)));
    const [rc0, red0, ag0] = [cpuSum(replicas.map((r) => r.child)), (await redisCpu(admin)).mainMs, cpuSum(fleet.children)];
    const t0 = performance.now();
    const { sentAt, answers } = await storm(nodes, replicas);
    const deadline = performance.now() + STORM_TIMEOUT_MS;
    while (performance.now() < deadline && !nodes.every((x) => fleet.finished.has(x) || fleet.failed.has(x))) await sleep(100);
    const [rc1, red1, ag1] = [cpuSum(replicas.map((r) => r.child)), (await redisCpu(admin)).mainMs, cpuSum(fleet.children)];
    const stats1 = await Promise.all(replicas.map((r) => statsOf(r.child)));
    const lastRan = Math.max(...nodes.map((x) => fleet.ranAt.get(x)?.[0] ?? Number.NaN));
    const firstSent = Math.min(...sentAt.values());
    const lat = nodes
      .map((x) => (fleet.ranAt.get(x)?.[0] ?? Number.NaN) - sentAt.get(x)!)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const lost = nodes.filter((x) => !fleet.ranAt.has(x)).length;
    const wallS = (performance.now() - t0) / 1000;
    const allStartedS = lost === 0 ? (lastRan - firstSent) / 1000 : Number.NaN;
    const asks = stats1.map((s, i) => (s.requests['/v1/agents/breakers'] ?? 0) - (stats0[i]!.requests['/v1/agents/breakers'] ?? 0));
    const totalAsks = Math.max(
      1,
      asks.reduce((a, b) => a + b, 0),
    );
    const delta = (k: 'connections' | 'handshakes' | 'resumed'): number => stats1.reduce((t, s, i) => t + s[k] - stats0[i]![k], 0);
    // The webhooks' own connections are in these counts: 20 keep-alive ones at most.
    const breakers = new Breakers(admin, PREFIX);
    const stormState = (await breakers.states({ nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 3_600_000 })).find((b) => b.name === 'storm');
    const [receiverMs, redisMs, agentsMs] = [rc1 - rc0, red1 - red0, ag1 - ag0];
    const receiverRssMiB = replicas.map((r) => round(r.child.rssMiB(), 0));
    await sleep(200);
    const uncountedLines = fleet.children.flatMap((c) => c.lines.filter((l) => l.includes('without being counted towards the storm breaker')));
    // SIGTERM when profiling (the profile is written on a clean exit), else SIGKILL (2,000 agents' closes are slow).
    await Promise.all(fleet.children.map((c) => c.kill(process.env['FLEET_AGENT_PROF'] ? 'SIGTERM' : 'SIGKILL')));
    return {
      n,
      path,
      replicas: count,
      readyS,
      allStartedS: round(allStartedS, 2),
      startP50Ms: round(percentile(lat, 50), 0),
      startP99Ms: round(percentile(lat, 99), 0),
      answers,
      lost,
      duplicated: nodes.filter((x) => (fleet.ranAt.get(x)?.length ?? 0) > 1).length,
      failed: nodes.filter((x) => fleet.failed.has(x) && !fleet.finished.has(x)).length,
      receiverCpuMsPerJob: round(receiverMs / n, 3),
      redisCpuMsPerJob: round(redisMs / n, 3),
      agentsCpuMsPerJob: round(agentsMs / n, 3),
      totalCpuMsPerJob: round((receiverMs + redisMs + agentsMs) / n, 3),
      asksPerSecond: asks.map((a) => round(a / (Number.isFinite(allStartedS) ? allStartedS : wallS), 0)),
      connectionsPerAsk: round(delta('connections') / totalAsks, 3),
      handshakesPerAsk: round(delta('handshakes') / totalAsks, 3),
      resumedPerAsk: round(delta('resumed') / totalAsks, 3),
      stormCount: stormState?.count ?? Number.NaN,
      receiverRssMiB,
      uncounted: uncountedLines.length,
      ...(uncountedLines[0] ? { uncountedWhy: String((JSON.parse(uncountedLines[0]) as { err?: unknown }).err).slice(0, 200) } : {}),
    };
  } finally {
    await Promise.all(replicas.map((r) => r.child.kill()));
    admin.disconnect();
    await redis.destroy();
  }
}

const rows: Row[] = [];
for (const n of SIZES) {
  for (const count of REPLICAS) {
    for (const path of PATHS) {
      rows.push(await run(n, path, count));
      process.stdout.write(`${JSON.stringify(rows.at(-1))}\n`);
    }
  }
}
await api.close();

process.stdout.write(`\ndestructive steps per job: ${DESTRUCTIVE_STEPS}${DESTRUCTIVE_STEPS > 0 ? ' (enforce, breakers off)' : ''}\n`);
process.stdout.write(
  '\n| N | path | receivers | ready s | all started s | start p50 / p99 ms | receiver CPU ms/job | Redis CPU ms/job | agents CPU ms/job | total CPU ms/job | asks/s per replica | conns / handshakes / resumed per ask | storm count (uncounted) | lost | dup | failed | answers | receiver RSS MiB |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n',
);
for (const r of rows) {
  process.stdout.write(
    `| ${r.n} | ${r.path} | ${r.replicas} | ${r.readyS} | ${r.allStartedS} | ${r.startP50Ms} / ${r.startP99Ms} | ${r.receiverCpuMsPerJob} | ${r.redisCpuMsPerJob} | ${r.agentsCpuMsPerJob} | ${r.totalCpuMsPerJob} | ${r.asksPerSecond.join(' ')} | ${r.connectionsPerAsk} / ${r.handshakesPerAsk} / ${r.resumedPerAsk} | ${r.stormCount}${r.stormCount === r.n ? '' : ' (not exact)'} (${r.uncounted}) | ${r.lost} | ${r.duplicated} | ${r.failed} | ${Object.entries(
      r.answers,
    )
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')} | ${r.receiverRssMiB.join(' ')} |\n`,
  );
}
for (const r of rows.filter((x) => x.uncountedWhy))
  process.stdout.write(`\nN=${r.n} ${r.path} receivers=${r.replicas}: ${r.uncounted} starts uncounted, the first: ${r.uncountedWhy}\n`);
process.stdout.write('\nenrolled / unenrolled, same N and receivers:\n');
for (const e of rows.filter((r) => r.path !== 'unenrolled')) {
  const u = rows.find((r) => r.path === 'unenrolled' && r.n === e.n && r.replicas === e.replicas);
  if (!u) continue;
  process.stdout.write(
    `  N=${e.n} receivers=${e.replicas} ${e.path}: all started ${round(e.allStartedS / u.allStartedS, 2)}x, total CPU per job ${round(e.totalCpuMsPerJob / u.totalCpuMsPerJob, 2)}x (receivers ${round(e.receiverCpuMsPerJob / u.receiverCpuMsPerJob, 2)}x, Redis ${round(e.redisCpuMsPerJob / u.redisCpuMsPerJob, 2)}x, agents ${round(e.agentsCpuMsPerJob / u.agentsCpuMsPerJob, 2)}x)\n`,
  );
}
const out = here(`./results/fleet-paths-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify({ sizes: SIZES, paths: PATHS, replicas: REPLICAS, perProcess: PER_PROCESS, destructiveSteps: DESTRUCTIVE_STEPS, rows }, null, 2),
);
process.stdout.write(`\nwrote ${out}\n`);
process.exit(0);
