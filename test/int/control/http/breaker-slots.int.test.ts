import { request } from 'node:http';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { BREAKER_SEAL_TTL_MS, BREAKER_SLOTS_PATH, breakerSubject, type BreakerAsk } from '../../../../src/core/controls/breaker-wire.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { createJobControls } from '../../../../workers/engine/job-controls.ts';
import { ReceiverBreakers } from '../../../../workers/engine/receiver-breakers.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';

// Issue 30: a node's own Redis user may not write the breakers' keys (it could trip or clear a
// breaker for the whole fleet), so an agent's breaker slots are taken by the receiver, for the
// node whose work key sealed the request. What node A holds (its queue's node-agent work key)
// takes A's slots and nothing else; the receiver's caps apply; a captured request replays into
// nothing; and a receiver that does not answer is no slot.

const silent = createLogger('test', 'silent');
const caps = { nodePerHour: 3, clusterPerHour: 100, stormNodes: 2, stormWindowMs: 60_000 };

/** What node `n`'s enrolled agent holds: its queue's node-agent work key, nothing else; `now`: its clock. */
const nodeSealer = (n: string, now: () => number = Date.now) => {
  const root = readKeys(TEST_KEYS_DIR).get('node-agent.test')!;
  const q = nodeQueueName(n);
  const key = workKeyOf(root, 'node-agent', q);
  return sealerOf({ verify: new Map([['node-agent.test', key]]), signing: { role: 'node-agent', kid: 'test', key }, scope: q }, now)!;
};

/** The body of node `n`'s agent's ask, sealed at `iat` (its clock) for `ttlMs`. */
const sealedAsk = (n: string, ask: BreakerAsk, iat = Date.now(), ttlMs = BREAKER_SEAL_TTL_MS): string =>
  JSON.stringify({ ask, seal: nodeSealer(n, () => iat).seal('breaker', breakerSubject(nodeQueueName(n)), ask, ttlMs) });

/** POSTs a body to the receiver's breaker route, from `localAddress` when given (any of 127/8 is this host). */
function postAsk(url: string, body: string, localAddress?: string): Promise<{ status: number; retryAfter?: string; text: string }> {
  const u = new URL(BREAKER_SLOTS_PATH, url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: false,
        ...(localAddress ? { localAddress } : {}),
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, ...(res.headers['retry-after'] ? { retryAfter: res.headers['retry-after'] } : {}) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

describe('breaker slots taken by the receiver for the node a seal proves', () => {
  const prefix = uniquePrefix('slots');
  const k = controlKeys(prefix);
  let receiver: Receiver;
  let redis: Redis;
  const forA = () => new ReceiverBreakers({ url: receiver.url, queue: nodeQueueName('slot-a'), sealer: nodeSealer('slot-a') });

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        operatorAuth: 'off',
        breakerNodeDestructivePerHour: caps.nodePerHour,
        breakerClusterDestructivePerHour: caps.clusterPerHour,
        breakerStormNodes: caps.stormNodes,
        breakerStormWindowSeconds: 60,
      }),
      { log: silent },
    );
  });
  afterAll(async () => {
    await receiver?.close();
    redis?.disconnect();
    await dropPrefix(prefix);
  });

  it("takes node A's slot in its window and the cluster's, with the receiver's caps whatever the agent says", async () => {
    const r = await forA().reserveDestructive(
      { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1 },
      { node: 'slot-a', jobId: 'j1', stepId: 's1' },
    );
    expect(r).toEqual({ ok: true, nodeCount: 1, clusterCount: 1, tripped: [] });
    expect(await redis.zcard(k.destructiveNode('slot-a'))).toBe(1);
    // The receiver's cap (3 an hour) trips node A's breaker on the third, whatever caps the agent passed.
    await forA().reserveDestructive(caps, { node: 'slot-a', jobId: 'j2', stepId: 's1' });
    const third = await forA().reserveDestructive(caps, { node: 'slot-a', jobId: 'j3', stepId: 's1' });
    expect(third.ok && third.tripped.map((t) => t.breaker)).toEqual(['node/slot-a']);
    // Tripped, A's further asks add nothing to the cluster's window: one node cannot fill it past its own cap.
    const blocked = await forA().reserveDestructive(caps, { node: 'slot-a', jobId: 'j4', stepId: 's1' });
    expect(blocked).toMatchObject({ ok: false, blockedBy: { breaker: 'node/slot-a' } });
    expect(await redis.zcard(k.destructiveCluster)).toBe(3);
  });

  it("refuses A's key for node B, another role's key, and changes nothing", async () => {
    const before = await redis.zcard(k.destructiveCluster);
    const asB = new ReceiverBreakers({ url: receiver.url, queue: nodeQueueName('slot-a'), sealer: nodeSealer('slot-a') });
    // A's sealer, B named in the request (the seal is over A's queue: the receiver derives B's key).
    const post = async (body: unknown) =>
      fetch(`${receiver.url}${BREAKER_SLOTS_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const ask = { op: 'reserve', node: 'slot-b', jobId: 'jb', stepId: 's1' } as const;
    const forged = await post({
      ask,
      seal: nodeSealer('slot-a').seal('breaker', breakerSubject(nodeQueueName('slot-a')), ask, BREAKER_SEAL_TTL_MS),
    });
    expect(forged.status).toBe(403);
    const alsoForged = await post({
      ask,
      seal: nodeSealer('slot-a').seal('breaker', breakerSubject(nodeQueueName('slot-b')), ask, BREAKER_SEAL_TTL_MS),
    });
    expect(alsoForged.status).toBe(403);
    // The receiver role's own root is not a node agent's key.
    const receiverRoot = sealerOf(keyringFor('receiver', readKeys(TEST_KEYS_DIR)))!.workFor!(nodeQueueName('slot-b'));
    expect((await post({ ask, seal: receiverRoot.seal('breaker', breakerSubject(nodeQueueName('slot-b')), ask, BREAKER_SEAL_TTL_MS) })).status).toBe(403);
    expect((await post({ ask })).status).toBe(400);
    await expect(asB.reserveDestructive(caps, { node: 'slot-b', jobId: 'jb', stepId: 's1' })).rejects.toThrow(/HTTP 403/);
    expect(await redis.zcard(k.destructiveCluster)).toBe(before);
    expect(await redis.exists(k.destructiveNode('slot-b'))).toBe(0);
  });

  it('a captured request sent again takes no second slot', async () => {
    const s = nodeSealer('slot-c');
    const ask = { op: 'reserve', node: 'slot-c', jobId: 'jc', stepId: 's1' } as const;
    const body = JSON.stringify({ ask, seal: s.seal('breaker', breakerSubject(nodeQueueName('slot-c')), ask, BREAKER_SEAL_TTL_MS) });
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${receiver.url}${BREAKER_SLOTS_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(200);
    expect(await redis.zcard(k.destructiveNode('slot-c'))).toBe(1);
  });

  it("one node's starts, however many, count once towards the storm breaker", async () => {
    for (let i = 0; i < 20; i++) expect(await forA().recordNodeActivity(caps, 'slot-a', 'alertmanager')).toBeUndefined();
    expect(await redis.zrange(k.storm, 0, -1)).toEqual(['slot-a']);
    expect(await redis.hexists(k.tripped, 'storm')).toBe(0);
  });

  it("refuses a seal that lives longer than a minute or is dated away from the receiver's clock, and takes no slot for it", async () => {
    const ask = (jobId: string) => ({ op: 'reserve', node: 'slot-e', jobId, stepId: 's1' }) as const;
    // The issue's: sealed three hours ago, valid for ten years.
    const old = await postAsk(receiver.url, sealedAsk('slot-e', ask('old'), Date.now() - 3 * HOUR, 10 * 365 * 24 * HOUR));
    expect(old).toMatchObject({ status: 403, text: expect.stringContaining('lives at most 60 s') });
    // Fresh, but a second longer than a minute.
    expect((await postAsk(receiver.url, sealedAsk('slot-e', ask('long'), Date.now(), BREAKER_SEAL_TTL_MS + 1_000))).status).toBe(403);
    // A minute's life, dated two minutes ahead of the receiver, or begun and ended 90 s ago.
    expect(await postAsk(receiver.url, sealedAsk('slot-e', ask('ahead'), Date.now() + 2 * MINUTE))).toMatchObject({
      status: 403,
      text: expect.stringContaining('not-yet-valid'),
    });
    expect(await postAsk(receiver.url, sealedAsk('slot-e', ask('late'), Date.now() - 90_000))).toMatchObject({
      status: 403,
      text: expect.stringContaining('expired'),
    });
    expect(await redis.exists(k.destructiveNode('slot-e'))).toBe(0);
  });

  it("places the slot at the receiver's now, whatever the seal's time says; a replay keeps that slot and its time", async () => {
    // The agent's clock 50 s behind: its seal still holds, its time does not place the slot.
    const iat = Date.now() - 50_000;
    const ask = { op: 'reserve', node: 'slot-f', jobId: 'jf', stepId: 's1' } as const;
    const body = sealedAsk('slot-f', ask, iat);
    const sent = Date.now();
    expect((await postAsk(receiver.url, body)).status).toBe(200);
    const member = `jf/s1@${new Date(iat).toISOString()}`;
    const placed = Number(await redis.zscore(k.destructiveNode('slot-f'), member));
    expect(placed).toBeGreaterThanOrEqual(sent - 1_000);
    expect(placed).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(Number(await redis.zscore(k.destructiveCluster, member))).toBe(placed);
    // Sent again a little later: the same slot, at the time it was first taken (not moved later in the window).
    await new Promise((r) => setTimeout(r, 20));
    expect((await postAsk(receiver.url, body)).status).toBe(200);
    expect(await redis.zrange(k.destructiveNode('slot-f'), 0, -1, 'WITHSCORES')).toEqual([member, String(placed)]);
    // A job start is counted at the receiver's now too.
    const startSent = Date.now();
    expect((await postAsk(receiver.url, sealedAsk('slot-f', { op: 'activity', node: 'slot-f', source: 'npd' }, iat))).status).toBe(200);
    expect(Number(await redis.zscore(k.storm, 'slot-f'))).toBeGreaterThanOrEqual(startSent - 1_000);
  });

  it("a receiver that does not answer is no slot: the job's start and its destructive step wait, saying why", async () => {
    const nowhere = new ReceiverBreakers({
      url: 'http://127.0.0.1:9',
      queue: nodeQueueName('slot-d'),
      sealer: nodeSealer('slot-d'),
      timeoutMs: 500,
    });
    const controls = createJobControls({
      redis,
      prefix,
      approval: { highRisk: false, runbooks: [], maxDestructiveSteps: 0 },
      approvalTtlMs: 60_000,
      caps,
      recheckMs: 1_000,
      queue: nodeQueueName('slot-d'),
      node: 'slot-d',
      log: silent,
      breakers: nowhere,
    });
    const begun = await controls.begin({
      jobId: 'jd',
      queue: nodeQueueName('slot-d'),
      runbook: 'residual-multipath-cleanup',
      createdAt: Date.now(),
      configuredMode: 'enforce',
    });
    expect(begun.park).toMatchObject({
      reason: 'breaker',
      why: expect.stringMatching(/could not be counted towards the storm breaker: the receiver's breakers at http:\/\/127\.0\.0\.1:9 did not answer/),
    });
    const step = { id: 'flush', description: 'flush the map', destructive: true, evidence: [] };
    const d = await begun.gate.beforeStep(step as never, { summary: 'x', steps: [step] } as never);
    expect(d).toMatchObject({
      go: false,
      park: { reason: 'breaker', why: expect.stringMatching(/^no breaker slot: the receiver's breakers/) },
    });
    // In dry-run nothing needs a breaker: the job goes on, uncounted.
    const dry = await controls.begin({
      jobId: 'jd2',
      queue: nodeQueueName('slot-d'),
      runbook: 'residual-multipath-cleanup',
      createdAt: Date.now(),
      configuredMode: 'dry-run',
    });
    expect(dry.mode).toBe('dry-run');
    expect(dry.park).toBeUndefined();
  });
});

describe('refused breaker asks spend the failed-auth budget and are logged once per interval', () => {
  const prefix = uniquePrefix('slots-limit');
  const lines: Array<{ msg?: string }> = [];
  let receiver: Receiver;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as { msg?: string });
        done();
      },
    });
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, operatorAuth: 'off', authFailuresPerMinute: 3 }), {
      log: pino({ level: 'warn' }, sink),
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await dropPrefix(prefix);
  });

  const forged = (node: string) => {
    const ask = { op: 'reserve', node, jobId: 'x', stepId: 's1' } as const;
    // Sealed with node A's key, naming another node.
    return JSON.stringify({ ask, seal: nodeSealer('limit-a').seal('breaker', breakerSubject(nodeQueueName(node)), ask, BREAKER_SEAL_TTL_MS) });
  };

  it("answers 429 with Retry-After once an address has spent its budget, even for a right seal; another address's agent still gets its slot", async () => {
    for (let i = 0; i < 3; i++) expect((await postAsk(receiver.url, forged(`limit-b${i}`), '127.0.3.1')).status).toBe(403);
    const limited = await postAsk(receiver.url, forged('limit-b9'), '127.0.3.1');
    expect(limited.status).toBe(429);
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    // A right seal from that address too: otherwise the one answer that is not 429 tells a guesser something.
    const right = sealedAsk('limit-a', { op: 'reserve', node: 'limit-a', jobId: 'ok', stepId: 's1' });
    expect((await postAsk(receiver.url, right, '127.0.3.1')).status).toBe(429);
    expect((await postAsk(receiver.url, right, '127.0.3.2')).status).toBe(200);
  });

  it('logs the first refusal of an interval, and not one line per request after it', async () => {
    for (let i = 0; i < 20; i++) expect((await postAsk(receiver.url, forged(`limit-c${i}`), `127.0.4.${i + 1}`)).status).toBe(403);
    // With the other test's refusals, more than 20 in well under the interval: one line so far (its count comes at the interval's end).
    expect(lines.filter((l) => l.msg?.startsWith('breaker request refused'))).toHaveLength(1);
  });
});
