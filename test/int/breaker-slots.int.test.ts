import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { BREAKER_SEAL_TTL_MS, BREAKER_SLOTS_PATH, breakerSubject } from '../../src/core/controls/breaker-wire.ts';
import { controlKeys } from '../../src/core/controls/redis-keys.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../src/control/receiver.ts';
import { keyringFor, readKeys } from '../../src/core/trust/keyring.ts';
import { sealerOf } from '../../src/core/trust/seal.ts';
import { workKeyOf } from '../../src/core/trust/work-keys.ts';
import { createJobControls } from '../../src/agents/engine/job-controls.ts';
import { ReceiverBreakers } from '../../src/agents/engine/receiver-breakers.ts';
import { testConfig } from '../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';
import { TEST_KEYS_DIR } from '../support/trust.ts';

// Issue 30: a node's own Redis user may not write the breakers' keys (it could trip or clear a
// breaker for the whole fleet), so an agent's breaker slots are taken by the receiver, for the
// node whose work key sealed the request. What node A holds (its queue's node-agent work key)
// takes A's slots and nothing else; the receiver's caps apply; a captured request replays into
// nothing; and a receiver that does not answer is no slot.

const silent = createLogger('test', 'silent');
const caps = { nodePerHour: 3, clusterPerHour: 100, stormNodes: 2, stormWindowMs: 60_000 };

/** What node `n`'s enrolled agent holds: its queue's node-agent work key, nothing else. */
const nodeSealer = (n: string) => {
  const root = readKeys(TEST_KEYS_DIR).get('node-agent.test')!;
  const q = nodeQueueName(n);
  const key = workKeyOf(root, 'node-agent', q);
  return sealerOf({ verify: new Map([['node-agent.test', key]]), signing: { role: 'node-agent', kid: 'test', key }, scope: q })!;
};

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
