import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../scripts/lib/local-redis.ts';
import { startReceiver } from '../src/control/receiver.ts';
import { testConfig } from '../test/support/config.ts';
import { writeControlKeys } from '../test/support/control-keys.ts';
import { startFakeKubeApi } from '../test/testkit/fake-kube-api.ts';
import { rssMiB } from '../test/support/child.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { nodeAgentCommand } from './lib/deployed-command.ts';

// `npm run bench:agent-rss` (after `npm run build`): the node agent's idle RSS as deployed, with
// and without what its probe server serves. Agents of the same build run side by side, started
// with the DaemonSet's command and allocator settings (deploy/charts/volume-medic/templates/
// node-agent.yaml, read by bench/lib/deployed-command.ts), against a private redis-server; one
// gets no request (the baseline), the others the kubelet's cadence (/readyz every 10 s, /healthz
// every 20 s) and a Prometheus scrape of /metrics every 30 s. Beside them the floor (issue 33):
// Node with the same flags and settings and one idle BullMQ Worker on a node queue, nothing else
// (bench/lib/floor-agent.mjs), and the floor plus each library the idle agent holds (zod's mini
// API, pino, an HTTP server), alone and together. VmRSS from /proc/<pid>/status, read every 15 s;
// reported per checkpoint as MiB, the difference to the baseline and the baseline's ratio to the
// floor. One more agent enrols at start, as the DaemonSet's does (ENROL_URL, against a receiver in
// this process and the wire fake of the API server's TokenReview): it then holds its node's work
// keys and verifies seals instead of ALLOW_UNSIGNED_WORK. AGENT_RSS_MINUTES (default 30) sets the
// length.

const MINUTES = Number(process.env['AGENT_RSS_MINUTES'] ?? 30);
const { flags: NODE_FLAGS, env: NODE_TUNABLES } = nodeAgentCommand();

interface Variant {
  name: string;
  flags: string[];
  traffic: boolean;
  /** The script (default: the built agent). */
  script?: string;
  /** For the floor: FLOOR_WITH (bench/lib/floor-agent.mjs). */
  floorWith?: string;
  /** Enrols at start (ENROL_URL), as deployed; the others run with ALLOW_UNSIGNED_WORK. */
  enrolled?: boolean;
}

const FLOOR = 'bench/lib/floor-agent.mjs';
const VARIANTS: Variant[] = [
  { name: 'no requests (baseline)', flags: NODE_FLAGS, traffic: false },
  { name: 'floor (one idle BullMQ Worker)', flags: NODE_FLAGS, traffic: false, script: FLOOR },
  { name: 'enrolled, no requests', flags: NODE_FLAGS, traffic: false, enrolled: true },
  { name: 'probes + scrapes', flags: NODE_FLAGS, traffic: true },
  { name: 'probes + scrapes, --optimize-for-size', flags: [...NODE_FLAGS, '--optimize-for-size'], traffic: true },
  // Where the distance from the floor goes: the floor plus each library the idle agent holds, and
  // prom-client, which it no longer loads (its series: adapters/observability/lean-exposition.ts).
  { name: 'floor + zod/mini', flags: NODE_FLAGS, traffic: false, script: FLOOR, floorWith: 'zod/mini' },
  { name: 'floor + pino', flags: NODE_FLAGS, traffic: false, script: FLOOR, floorWith: 'pino' },
  { name: 'floor + HTTP server', flags: NODE_FLAGS, traffic: false, script: FLOOR, floorWith: 'http' },
  { name: 'floor + zod/mini, pino, HTTP server', flags: NODE_FLAGS, traffic: false, script: FLOOR, floorWith: 'zod/mini,pino,http' },
  { name: 'floor + prom-client (not held)', flags: NODE_FLAGS, traffic: false, script: FLOOR, floorWith: 'prom-client' },
];

const redis = await startPrivateRedis();
const dir = mkdtempSync(join(tmpdir(), 'vm-agent-rss-'));
const AGENT_SA = 'volume-medic/volume-medic-node-agent';
const api = await startFakeKubeApi();
const controlKeys = writeControlKeys();
const receiver = await startReceiver(
  testConfig({
    redisUrl: redis.url,
    queuePrefix: 'agentrss',
    operatorAuth: 'off',
    enrolNodeAgents: [AGENT_SA],
    controlSigningKeyFile: controlKeys.keyFile,
    controlVerifyCertFile: controlKeys.certFile,
  }),
  { operatorKubeConfig: api.kubeConfig() },
);
/** The enrolment settings of node `node`'s agent: its projected token, which the fake reviews as its pod's. */
function enrolmentEnv(node: string): Record<string, string> {
  const token = `token-${node}`;
  api.addAgentPod(token, { serviceAccount: AGENT_SA, pod: `agent-${node}`, uid: `uid-${node}`, node });
  const tokenFile = join(dir, `${node}.token`);
  writeFileSync(tokenFile, `${token}\n`);
  return { ENROL_URL: receiver.url, ENROL_TOKEN_FILE: tokenFile, CONTROL_VERIFY_CERT_FILE: controlKeys.certFile };
}
const agents: { v: Variant; child: ChildProcess; port: number; samples: { s: number; mib: number }[] }[] = [];
const timers: NodeJS.Timeout[] = [];
try {
  for (const [i, v] of VARIANTS.entries()) {
    const port = await freePort();
    const child = spawn(process.execPath, [...v.flags, v.script ?? 'dist/node-agent/main.mjs'], {
      env: {
        PATH: process.env['PATH'] ?? '',
        REDIS_URL: redis.url,
        QUEUE_PREFIX: 'agentrss',
        NODE_NAME: `rss-${i}`,
        STATE_DIR: mkdtempSync(join(dir, 's')),
        PROBE_PORT: String(port),
        PROBE_LISTEN_ADDRESS: '127.0.0.1',
        ...(v.enrolled ? enrolmentEnv(`rss-${i}`) : { ALLOW_UNSIGNED_WORK: 'true' }),
        LOG_LEVEL: 'warn',
        ...NODE_TUNABLES,
        ...(v.floorWith ? { FLOOR_WITH: v.floorWith } : {}),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    agents.push({ v, child, port, samples: [] });
  }
  const get = (port: number, path: string): void => {
    fetch(`http://127.0.0.1:${port}${path}`)
      .then(
        (r) => r.arrayBuffer(),
        () => undefined,
      )
      .catch(() => undefined);
  };
  for (const a of agents.filter((x) => x.v.traffic)) {
    timers.push(
      setInterval(() => get(a.port, '/readyz'), 10_000),
      setInterval(() => get(a.port, '/healthz'), 20_000),
      setInterval(() => get(a.port, '/metrics'), 30_000),
    );
  }
  const start = Date.now();
  const checkpoints = [1, 2, 4, 8, 15, 30, 60].filter((m) => m <= MINUTES);
  if (!checkpoints.includes(MINUTES)) checkpoints.push(MINUTES);
  for (;;) {
    await sleep(15_000);
    const s = Math.round((Date.now() - start) / 1000);
    for (const a of agents) a.samples.push({ s, mib: rssMiB(a.child.pid!) });
    if (s >= MINUTES * 60) break;
  }
  const at = (a: (typeof agents)[number], m: number): number => {
    // The mean of the readings in the minute before the checkpoint.
    const xs = a.samples.filter((x) => x.s > (m - 1) * 60 && x.s <= m * 60 + 5).map((x) => x.mib);
    return xs.reduce((p, x) => p + x, 0) / xs.length;
  };
  const base = agents[0]!;
  const floor = agents[1]!;
  const withAll = agents.find((a) => a.v.floorWith === 'zod/mini,pino,http')!;
  const delta = (x: number, from: number): string => `${x - from >= 0 ? '+' : ''}${(x - from).toFixed(1)}`;
  const agentRows = agents.filter((a) => a.v.script !== FLOOR);
  console.log(`| after | ${agentRows.map((a) => a.v.name).join(' | ')} | floor | agent / floor | agent / (floor + zod/mini, pino, HTTP) |`);
  console.log(`| --- | ${agentRows.map(() => '---:').join(' | ')} | ---: | ---: | ---: |`);
  for (const m of checkpoints) {
    const b = at(base, m);
    const cells = agentRows.map((a) => (a === base ? `${b.toFixed(1)} MiB` : `${at(a, m).toFixed(1)} MiB (${delta(at(a, m), b)})`));
    console.log(
      `| ${m} min | ${cells.join(' | ')} | ${at(floor, m).toFixed(1)} MiB | ${(b / at(floor, m)).toFixed(3)}x | ${(b / at(withAll, m)).toFixed(3)}x |`,
    );
  }
  // Where the distance goes: each addition's MiB over the floor, at the last checkpoint.
  const last = checkpoints.at(-1)!;
  const f = at(floor, last);
  console.log(`\n| after ${last} min | MiB | over the floor |\n| --- | ---: | ---: |`);
  for (const a of [floor, ...agents.filter((x) => x.v.floorWith), base, ...agents.filter((x) => x.v.enrolled)])
    console.log(`| ${a.v.name} | ${at(a, last).toFixed(1)} | ${delta(at(a, last), f)} |`);
} finally {
  for (const t of timers) clearInterval(t);
  for (const a of agents) a.child.kill('SIGTERM');
  await sleep(500);
  await receiver.close();
  await api.close();
  await redis.destroy();
  rmSync(dir, { recursive: true, force: true });
}
