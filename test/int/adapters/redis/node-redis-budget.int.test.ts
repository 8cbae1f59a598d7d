import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect as connectTcp, type Socket } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmTemplate } from '../../../../scripts/deploy/chart.ts';
import { REDIS_USERS, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { nodeRestrictionsKey } from '../../../../src/core/redis-budget/restriction.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { run as runCli } from '../../../../src/control/cli/main.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { EnrolAnswer } from '../../../../src/core/trust/enrolment-wire.ts';
import { sealJob } from '../../../../src/core/trust/work.ts';
import { testConfig } from '../../../support/config.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { rawQueue } from '../../../support/raw-jobs.ts';
import { testJobs } from '../../../testkit/jobs.ts';
import { type AclRedis, startAclRedis } from '../../../support/acl-redis.ts';

// Issue 44, item 1 (the memory flood): node A's own Redis user wrote ~60 MB into its own keys and
// pushed the shared Redis past maxmemory (noeviction): the receiver's job and audit writes got OOM.
// Here the same attack against real processes: a redis-server with the chart's ACL and a small
// maxmemory, the real receiver with enrolment and per-node users (TokenReview from the fake API
// server), node B's real enrolled agent. With the per-node memory budget the receiver stores jobs
// again within seconds, node A's user may only read (also after it enrols again), node B's agent
// and user work on, none of node B's keys is touched, and the alert's series names node A. With
// NODE_REDIS_BUDGET_MIB=0 (the control removed) the webhooks keep getting 503 (OOM).

const NS = 'volume-medic';
const AGENT_SA = `${NS}/volume-medic-node-agent`;
const DAY = 86_400_000;
const MiB = 1_048_576;
const TOKEN = 'webhook-token-budget-0123';
/** BullMQ keys that come and go with a worker's own work. */
const TRANSIENT = /:(lock|marker|active|wait|paused|prioritized|delayed|stalled|stalled-check|pc|limiter)$/;

describe("a node flooding its own keys loses its writes, and the fleet's writes succeed again (per-node Redis memory budget)", () => {
  const prefix = uniquePrefix('budget');
  const passwords = { receiver: 'pw-receiver-6611', 'cluster-worker': 'pw-cluster-6612', 'node-agent': 'pw-agent-6613' };
  const files = writeControlKeys();
  let redis: AclRedis | undefined;
  let dir: string;
  let port: number;
  let admin: Redis;
  let api: FakeKubeApi;
  let receiver: Receiver;
  let agent: ChildProcess | undefined;
  let out = '';
  let seq = 0;

  const enrol = async (token: string, node: string) => {
    const res = await fetch(`${receiver.url}/v1/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ as: 'node-agent', node }),
    });
    expect(res.status).toBe(200);
    return EnrolAnswer.parse(await res.json());
  };
  const as = (a: EnrolAnswer) => new Redis({ port, host: '127.0.0.1', username: a.redis!.username, password: a.redis!.password, maxRetriesPerRequest: 0 });
  /** A resolved KubeNodeNotReady for node-b (a new alert each time): the answer, and whether its job is in Redis. */
  const webhook = async (): Promise<{ status: number; stored: boolean }> => {
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('node-b', 'resolved', `fpbudget${++seq}`)]), TOKEN);
    const key = r.status === 202 ? (r.json.accepted?.[0]?.key as string | undefined) : undefined;
    return { status: r.status, stored: key !== undefined && (await admin.exists(`${prefix}:${nodeQueueName('node-b')}:${key}`)) === 1 };
  };
  const keysOf = async (node: string): Promise<Map<string, number>> => {
    const sizes = new Map<string, number>();
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:${nodeQueueName(node)}:*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) sizes.set(k, Number(await admin.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')));
    } while (cursor !== '0');
    return sizes;
  };

  /** Node A's own connection, sending the start of a SET of `bytes` and nothing more. */
  const pinMemory = async (a: EnrolAnswer, key: string, bytes: number): Promise<Socket> => {
    const socket = connectTcp(port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    const bulk = (v: string) => `$${Buffer.byteLength(v)}\r\n${v}\r\n`;
    socket.write(`*3\r\n${bulk('AUTH')}${bulk(a.redis!.username)}${bulk(a.redis!.password)}`);
    const [answer] = (await once(socket, 'data')) as [Buffer];
    expect(answer.toString()).toBe('+OK\r\n');
    socket.write(`*3\r\n${bulk('SET')}${bulk(key)}$${bytes}\r\nf`);
    // A byte now and then: Redis gives an idle client's unused room back after 2 s.
    const trickle = setInterval(() => socket.write('f'), 300);
    socket.on('close', () => clearInterval(trickle));
    return socket;
  };

  beforeAll(async () => {
    // The bundled Redis' limits on connections' memory, as the chart renders them.
    const sts = helmTemplate({ show: ['templates/redis.yaml'] }).find((o) => o.kind === 'StatefulSet')!;
    const chartArgs = (sts['spec'] as { template: { spec: { containers: { args: string[] }[] } } }).template.spec.containers[0]!.args;
    const clientLimits = ['--maxmemory-clients', '--proto-max-bulk-len']
      .filter((a) => !(a === '--maxmemory-clients' && process.env['VM_TEST_NO_CLIENT_EVICTION'] === '1'))
      .flatMap((a) => [a, chartArgs[chartArgs.indexOf(a) + 1]!]);
    redis = await startAclRedis({
      acl: renderRedisAcl({ prefix, passwords }),
      name: 'vm-budget',
      args: ['--maxmemory', '24mb', '--maxmemory-policy', 'noeviction', ...clientLimits],
    });
    ({ dir, port } = redis);
    admin = new Redis(redis.adminUrl);
    api = await startFakeKubeApi();
    for (const node of ['node-a', 'node-b', 'node-c'])
      api.addAgentPod(`token-${node.slice(-1)}`, { serviceAccount: AGENT_SA, pod: `agent-${node}`, uid: `uid-${node}`, node });
    receiver = await startReceiver(
      testConfig({
        redisUrl: `redis://${REDIS_USERS.receiver}:${passwords.receiver}@127.0.0.1:${port}`,
        queuePrefix: prefix,
        tokens: [TOKEN],
        operatorAuth: 'insecure',
        enrolNodeAgents: [AGENT_SA],
        redisNodeUsers: true,
        // The control under test; 0 turns it off (then the flood below keeps every webhook at 503).
        nodeRedisBudgetMib: Number(process.env['VM_TEST_NODE_BUDGET_MIB'] ?? 4),
        nodeRedisBudgetScanSeconds: 1,
        fleetMetricsLeaseSeconds: 0,
        controlSigningKeyFile: files.keyFile,
        controlVerifyCertFile: files.certFile,
      }),
      { operatorKubeConfig: api.kubeConfig() },
    );
    // Node B's real agent, enrolled: its own Redis user.
    writeFileSync(join(dir, 'token-b'), 'token-b');
    agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: {
        ...process.env,
        REDIS_URL: `redis://127.0.0.1:${port}`,
        QUEUE_PREFIX: prefix,
        NODE_NAME: 'node-b',
        STATE_DIR: mkdtempSync(join(tmpdir(), 'vm-budget-state-')),
        ENROL_URL: receiver.url,
        ENROL_TOKEN_FILE: join(dir, 'token-b'),
        CONTROL_VERIFY_CERT_FILE: files.certFile,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    agent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor('node-b agent to enrol and start', async () => (out.includes('READY') ? true : undefined), 20_000);
  }, 60_000);

  afterAll(async () => {
    agent?.kill('SIGKILL');
    await receiver?.close();
    await api?.close();
    admin?.disconnect();
    await redis?.stop();
  });

  /** Node B's job, sealed by the receiver, put on its queue by hand; resolves when its agent ran it. */
  const runOnB = async (key: string): Promise<void> => {
    const queue = rawQueue(admin, prefix, nodeQueueName('node-b'));
    try {
      const job: RemediationJob = {
        version: 1,
        key,
        runbook: 'residual-multipath-cleanup',
        target: { node: 'node-b' },
        evidence: [{ source: 'api', summary: 's', raw: null }],
      };
      await queue.add(job.runbook, sealJob(testSealer('receiver'), nodeQueueName('node-b'), job, DAY), { jobId: job.key });
      await waitFor(`node-b to run ${key}`, async () => (out.includes(`RAN residual-multipath-cleanup ${key}`) ? true : undefined), 30_000);
    } finally {
      await queue.close();
    }
  };

  it('node B, busy but under its budget, is counted again and again and never restricted or touched', async () => {
    const b = await enrol('token-b', 'node-b');
    await runOnB('budget-b-1');
    for (let i = 0; i < 10; i++) expect((await webhook()).status).toBe(202);
    // Busy: about half of its 4 MiB budget, in records of the sizes a queue holds (a big job result, an audit list).
    const asB = as(b);
    try {
      await asB.set(`${prefix}:${nodeQueueName('node-b')}:big-result`, 'r'.repeat(330_000));
      await asB.rpush(`${prefix}:${nodeQueueName('node-b')}:vm:audit-like`, ...Array.from({ length: 1000 }, (_, i) => `${i}:${'e'.repeat(550)}`));
      await asB.set(`${prefix}:${nodeQueueName('node-b')}:bigger`, 'x'.repeat(900_000));
    } finally {
      asB.disconnect();
    }
    // Its agent done with the webhooks' jobs, so that only the budget could change its keys now.
    const jobs = testJobs(admin, prefix);
    try {
      await waitFor('node-b to finish its jobs', async () =>
        (await jobs.count(nodeQueueName('node-b'), ['waiting', 'active', 'delayed', 'prioritized'])) === 0 ? true : undefined,
      );
    } finally {
      await jobs.close();
    }
    const before = await keysOf('node-b');
    const total = [...before.values()].reduce((a, c) => a + c, 0);
    expect(total).toBeGreaterThan(1.5 * MiB);
    expect(total).toBeLessThan(4 * MiB);
    // A count every second (NODE_REDIS_BUDGET_SCAN_SECONDS=1): several pass.
    await new Promise((r) => setTimeout(r, 3_500));
    expect(await admin.hgetall(nodeRestrictionsKey(prefix))).toEqual({});
    const after = await keysOf('node-b');
    // Nothing of it removed (but what comes and goes with its agent's work: a job's lock, BullMQ's
    // marker and lists that empty), its records as they were.
    for (const k of before.keys()) if (!TRANSIENT.test(k)) expect(after.has(k), k).toBe(true);
    for (const k of ['big-result', 'vm:audit-like', 'bigger']) {
      const key = `${prefix}:${nodeQueueName('node-b')}:${k}`;
      expect(after.get(key), key).toBe(before.get(key));
    }
    const stillB = as(b);
    try {
      expect(await stillB.set(`${prefix}:${nodeQueueName('node-b')}:probe`, '1')).toBe('OK');
    } finally {
      stillB.disconnect();
    }
    await runOnB('budget-b-2');
  }, 90_000);

  it("node A's 60 MB flood: the receiver stores jobs again within seconds, A may only read, B works on untouched, the alert names A", async () => {
    const a = await enrol('token-a', 'node-a');
    const bKeys = await keysOf('node-b');
    const asA = as(a);
    asA.on('error', () => {});
    const outcome = { ok: 0, oom: 0, cut: 0 };
    const count = (errors: (Error | null)[]): boolean => {
      outcome.ok += errors.filter((e) => !e).length;
      outcome.oom += errors.filter((e) => e && /OOM/.test(e.message)).length;
      outcome.cut += errors.filter((e) => e && !/OOM/.test(e.message)).length;
      return errors.some((e) => e);
    };
    const write = async (key: string, value: string, n = 4): Promise<(Error | null)[]> => {
      const p = asA.pipeline();
      for (let j = 0; j < n; j++) p.set(`${prefix}:${nodeQueueName('node-a')}:${key}:${j}`, value);
      return ((await p.exec().catch((e: Error) => [[e, null]])) ?? []).map(([err]) => err);
    };
    // Up to 60 MB into its own keys, pipelines of 4 values, until Redis refuses: OOM, or the
    // receiver cut it off (NOPERM, or its connection closed). Values of 1 MiB, then of 16 KiB,
    // then of 512 bytes: Redis full to its last few hundred bytes, as an attacker who wants every
    // write refused leaves it.
    let n = 0;
    for (const size of [MiB, 16_384, 512]) {
      const value = 'f'.repeat(size);
      for (let written = 0; written < 60 * MiB && outcome.cut === 0; written += 4 * size) if (count(await write(`flood:${n++}`, value))) break;
    }
    console.log(`node-redis-budget: the flood's writes: ${JSON.stringify(outcome)}`);
    expect(outcome.oom + outcome.cut, 'the flood wrote until Redis refused it').toBeGreaterThan(0);
    // And it keeps Redis over its maxmemory: a SET of 4 MiB begun and never finished, a byte at a
    // time (Redis sets the value's room aside as soon as it reads its length, and counts it as used).
    const pin = await pinMemory(a, `${prefix}:${nodeQueueName('node-a')}:pinned`, 4 * MiB);
    const flooded = Date.now();
    try {
      // The receiver stores jobs again: webhooks answered 202 whose jobs are in Redis, five in a row.
      let recovered: number | undefined;
      let inRow = 0;
      const statuses: number[] = [];
      while (Date.now() - flooded < 20_000) {
        const w = await webhook();
        statuses.push(w.status);
        inRow = w.status === 202 && w.stored ? inRow + 1 : 0;
        if (inRow === 1) recovered = Date.now();
        if (inRow === 5) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(inRow, `webhook answers after the flood: ${statuses.join(' ')}`).toBe(5);
      console.log(`node-redis-budget: jobs stored again ${recovered! - flooded} ms after the flood (answers: ${statuses.join(' ')})`);
      expect(recovered! - flooded).toBeLessThan(10_000);
    } finally {
      pin.destroy();
      asA.disconnect();
    }

    // Node A's user may only read: refused a write (NOPERM), also after it enrols again.
    for (const answer of [a, await enrol('token-a', 'node-a')]) {
      const again = as(answer);
      try {
        await expect(again.set(`${prefix}:${nodeQueueName('node-a')}:more`, 'x')).rejects.toThrow(/NOPERM/);
        await expect(again.rpush(`${prefix}:${nodeQueueName('node-a')}:vm:audit`, 'x')).rejects.toThrow(/NOPERM/);
        expect(await again.exists(`${prefix}:${nodeQueueName('node-a')}:more`)).toBe(0);
      } finally {
        again.disconnect();
      }
    }
    // Memory given back: node A holds its budget again; node B's keys are all there, unchanged.
    // (The trim may still be going when the jobs are stored again: what stopped them was node A's
    // writes and connections, closed first.)
    const aBytes = async () => [...(await keysOf('node-a')).values()].reduce((x, y) => x + y, 0);
    await waitFor('node A to hold its budget again', async () => ((await aBytes()) <= 4 * MiB ? true : undefined), 10_000);
    const bAfter = await keysOf('node-b');
    for (const k of bKeys.keys()) if (!TRANSIENT.test(k)) expect(bAfter.has(k), k).toBe(true);
    const restriction = JSON.parse((await admin.hget(nodeRestrictionsKey(prefix), 'node-a'))!);
    expect(restriction).toMatchObject({ budgetBytes: 4 * MiB, removed: { keys: expect.any(Number) } });
    expect(restriction.usedBytes).toBeGreaterThan(4 * MiB);
    // Node B's agent and user still work.
    await runOnB('budget-b-3');
    // The fleet audit trail says what happened; the alert's series names node A, and only it.
    const audit = await admin.lrange(controlKeys(prefix).audit, 0, 20);
    expect(audit.some((e) => e.includes('"node-redis-over-budget"') && e.includes('node/node-a'))).toBe(true);
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(metrics).toContain('volume_medic_node_redis_over_budget{node="node-a"} 1');
    expect(metrics).not.toContain('volume_medic_node_redis_over_budget{node="node-b"}');
    const listed = (await (await fetch(`${receiver.url}/v1/redis-budget`)).json()) as { restricted: { node: string }[] };
    expect(listed.restricted.map((r) => r.node)).toEqual(['node-a']);
  }, 90_000);

  it('stays restricted until an operator releases it; then node A writes again', async () => {
    const a = await enrol('token-a', 'node-a');
    const asA = as(a);
    try {
      await expect(asA.set(`${prefix}:${nodeQueueName('node-a')}:after`, 'x')).rejects.toThrow(/NOPERM/);
      // The operator's command line: what is restricted, then the release.
      const cli = async (...args: string[]): Promise<{ code: number; out: string }> => {
        let text = '';
        const code = await runCli(
          ['--url', receiver.url, '--token', 'operator-token', ...args],
          { KUBECONFIG: '/nonexistent' },
          (t) => {
            text += `${t}\n`;
          },
          (t) => {
            text += `${t}\n`;
          },
        );
        return { code, out: text };
      };
      const listed = await cli('redis-budget');
      expect(listed.code, listed.out).toBe(0);
      expect(listed.out).toMatch(/budget per node: 4\.0 MiB/);
      expect(listed.out).toMatch(/node-a\s/);
      expect((await cli('redis-budget', 'release', 'node-a')).code, 'a release needs a reason').toBe(2);
      const released = await cli('redis-budget', 'release', 'node-a', '--why', 'found the runaway writer');
      expect(released.code, released.out).toBe(0);
      expect(released.out).toMatch(/^node-a: released by insecure-anonymous/);
      expect(await asA.set(`${prefix}:${nodeQueueName('node-a')}:after`, 'x')).toBe('OK');
    } finally {
      asA.disconnect();
    }
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(metrics).not.toContain('volume_medic_node_redis_over_budget{node="node-a"}');
    expect((await admin.lrange(controlKeys(prefix).audit, 0, 5)).some((e) => e.includes('"node-redis-released"'))).toBe(true);
  }, 30_000);

  it("a node holding memory in its connections' buffers, under its key budget, is closed by Redis itself (the chart's maxmemory-clients)", async () => {
    // The budget counts keys; this holds none. Six SETs of 4 MiB begun and trickled: 24 MiB held
    // in buffers, Redis' whole maxmemory. Redis closes the connections holding the most once all
    // clients hold more than a quarter of it.
    const c = await enrol('token-c', 'node-c');
    const evicted = async () => Number(/^evicted_clients:(\d+)/m.exec(await admin.info('stats'))?.[1] ?? 0);
    const evictedBefore = await evicted();
    const pins = await Promise.all(Array.from({ length: 6 }, (_, i) => pinMemory(c, `${prefix}:${nodeQueueName('node-c')}:pin:${i}`, 4 * MiB)));
    const closed = new Set<number>();
    for (const [i, p] of pins.entries()) p.on('close', () => closed.add(i));
    try {
      await new Promise((r) => setTimeout(r, 500));
      let inRow = 0;
      const statuses: number[] = [];
      const started = Date.now();
      while (Date.now() - started < 15_000 && inRow < 5) {
        const w = await webhook();
        statuses.push(w.status);
        inRow = w.status === 202 && w.stored ? inRow + 1 : 0;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(inRow, `webhook answers while node-c holds buffers: ${statuses.join(' ')}`).toBe(5);
      expect(closed.size, 'Redis closed the connections holding the most').toBeGreaterThanOrEqual(4);
      expect(await evicted()).toBeGreaterThan(evictedBefore);
      // Node B's agent, an idle client, was not one of them.
      await runOnB('budget-b-4');
    } finally {
      for (const p of pins) p.destroy();
    }
  }, 60_000);
});
