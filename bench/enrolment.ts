import { request } from 'node:http';
import { writeKubeconfig } from '../test/support/kubeconfig-file.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { writeSigningKeys } from '../scripts/lib/signing-keys.ts';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { EnrolAnswer } from '../src/core/trust/enrolment-wire.ts';
import { startFakeKubeApi } from '../test/testkit/fake-kube-api.ts';
import { startChild } from '../test/support/child.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { percentile } from './lib/stats.ts';

// `npm run bench:enrolment`: a fleet's node agents enrolling at once, as after a mass reboot.
// The real receiver (its own process, ENROL_NODE_AGENTS, a private redis-server) reviews each
// agent's token with the wire fake of the API server's TokenReview and answers its node's work
// keys (and, with REDIS_NODE_USERS, creates the node's Redis ACL user). N simulated agents (one
// connection each, 64 at a time, each from its own loopback address, as pods on their own
// addresses would: the receiver's failed-auth budget is per address) enrol; each with a Redis
// user then connects with it, writes to its own queue and is refused another node's. Reported:
// wall time, receiver CPU and Redis main-thread CPU for the first enrolment of all N (one
// TokenReview each) and for a second round (a renewal: no review), and as a baseline in the same
// run, N refused requests (a body that does not parse, 400: the HTTP cost alone).

const N = Number(process.env['ENROL_AGENTS'] ?? 1000);
const CONCURRENCY = 64;
const NS = 'volume-medic';
const NODE_USERS = process.env['REDIS_NODE_USERS'] !== 'false';

const api = await startFakeKubeApi();
for (let i = 0; i < N; i++) {
  // Enrolment answers only for a Node the API server has (one GET of it per enrolment), and on a
  // renewal only to a pod that still exists (one GET of it instead of the TokenReview).
  api.addAgentPod(`token-${i}`, { serviceAccount: `${NS}/volume-medic-node-agent`, pod: `agent-${i}`, uid: `uid-${i}`, node: `node-${i}` });
}
const dir = mkdtempSync(join(tmpdir(), 'vm-bench-enrol-'));
const kubeconfig = writeKubeconfig(dir, api.url);
const redis = await startPrivateRedis();
const admin = new Redis(redis.url);
const receiver = startChild(
  'bench/servers/receiver.ts',
  {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: 'bench',
    SIGNING_KEYS_DIR: writeSigningKeys(undefined, ['receiver', 'cluster-worker', 'node-agent'], 'b'),
    LOG_LEVEL: 'warn',
    OPERATOR_AUTH: 'off',
    KUBECONFIG: kubeconfig,
    ENROL_NODE_AGENTS: `${NS}/volume-medic-node-agent`,
    ...(NODE_USERS ? { REDIS_NODE_USERS: 'true' } : {}),
  },
  { stdout: 'lines' },
);
const url = (await receiver.waitLine('READY', 30_000)).trim();

/** Agent i's own address (127.2.x.y): one pod, one address. */
const sourceOf = (i: number): string => `127.2.${1 + (Math.floor(i / 250) % 250)}.${1 + (i % 250)}`;

/** POST /v1/enrol from `from`, on a connection of its own. */
function enrolFrom(from: string, token: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const u = new URL('/v1/enrol', url);
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), authorization: `Bearer ${token}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as unknown }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

let firstError = '';
type Round = { wallMs: number; receiverCpuMs: number; redisCpuMs: number; p50: number; p99: number; reviews: number; ok: number };

async function round(body: (i: number) => unknown, token: (i: number) => string, expect: number): Promise<{ r: Round; answers: EnrolAnswer[] }> {
  const reviews0 = api.requestsTo('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length;
  const cpu0 = receiver.cpuMs();
  const rc0 = (await redisCpu(admin)).mainMs;
  const t0 = performance.now();
  const lat: number[] = [];
  const answers: EnrolAnswer[] = [];
  let next = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < N; i = next++) {
        const s = performance.now();
        const res = await enrolFrom(sourceOf(i), token(i), body(i));
        const json = res.json;
        lat.push(performance.now() - s);
        if (res.status === expect) ok++;
        else if (ok === 0 && !firstError) firstError = `HTTP ${res.status}: ${JSON.stringify(json).slice(0, 300)}`;
        if (res.status === 200) answers[i] = EnrolAnswer.parse(json);
      }
    }),
  );
  const wallMs = performance.now() - t0;
  return {
    r: {
      wallMs,
      receiverCpuMs: receiver.cpuMs() - cpu0,
      redisCpuMs: (await redisCpu(admin)).mainMs - rc0,
      p50: percentile(
        [...lat].sort((a, b) => a - b),
        50,
      ),
      p99: percentile(
        [...lat].sort((a, b) => a - b),
        99,
      ),
      ok,
      reviews: api.requestsTo('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length - reviews0,
    },
    answers,
  };
}

try {
  const baseline = await round(
    () => ({ as: 'nobody' }),
    (i) => `token-${i}`,
    400,
  );
  const first = await round(
    (i) => ({ as: 'node-agent', node: `node-${i}` }),
    (i) => `token-${i}`,
    200,
  );
  const again = await round(
    (i) => ({ as: 'node-agent', node: `node-${i}` }),
    (i) => `token-${i}`,
    200,
  );
  // Each agent's Redis user: its own queue yes, the next node's no.
  let own = 0;
  let refused = 0;
  const users = first.answers.filter((a) => a.redis).length;
  if (users > 0) {
    for (let i = 0; i < N; i += Math.max(1, Math.floor(N / 100))) {
      const a = first.answers[i]!;
      const c = new Redis(redis.url, {
        username: a.redis!.username,
        password: a.redis!.password,
        lazyConnect: true,
        maxRetriesPerRequest: 0,
      });
      await c.connect();
      if ((await c.set(`bench:${nodeQueueName(`node-${i}`)}:probe`, '1')) === 'OK') own++;
      await c.set(`bench:${nodeQueueName(`node-${(i + 1) % N}`)}:probe`, '1').catch((e: Error) => {
        if (/NOPERM/.test(e.message)) refused++;
      });
      c.disconnect();
    }
  }
  const aclUsers = ((await admin.call('ACL', 'LIST')) as string[]).filter((l) => l.startsWith('user volume-medic-node.')).length;
  const row = (name: string, r: Round) => ({
    round: name,
    ok: `${r.ok}/${N}`,
    'wall s': (r.wallMs / 1000).toFixed(2),
    'per s': Math.round(N / (r.wallMs / 1000)),
    'receiver CPU ms/agent': (r.receiverCpuMs / N).toFixed(3),
    'Redis CPU ms/agent': (r.redisCpuMs / N).toFixed(3),
    'p50 ms': r.p50.toFixed(1),
    'p99 ms': r.p99.toFixed(1),
    TokenReviews: r.reviews,
    'CPU vs baseline': (r.receiverCpuMs / Math.max(1, baseline.r.receiverCpuMs)).toFixed(2),
  });
  console.table([row('baseline (400, HTTP only)', baseline.r), row('first enrolment', first.r), row('renewal (cached review)', again.r)]);
  if (firstError) console.log(`first refusal: ${firstError}`);
  console.log(`agents ${N}; Redis node users created: ${aclUsers}; sampled agents writing their own queue: ${own}, refused another node's: ${refused}`);
  const per1000 = (first.r.receiverCpuMs / N) * 1000;
  console.log(
    `at 10,000 agents: receiver CPU ~${((per1000 * 10) / 1000).toFixed(1)} s, Redis main thread ~${(((first.r.redisCpuMs / N) * 10_000) / 1000).toFixed(1)} s (from the per-agent cost above); at this run's rate ${(10_000 / (N / (first.r.wallMs / 1000))).toFixed(0)} s wall`,
  );
} finally {
  await receiver.kill();
  admin.disconnect();
  await redis.destroy();
  await api.close();
}
