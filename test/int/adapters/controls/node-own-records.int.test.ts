import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { ControlsStore } from '../../../../src/adapters/controls/controls-store.ts';
import { auditMarksKey } from '../../../../src/adapters/controls/audit-marks.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { nodeUserName, nodeUserRules } from '../../../../src/adapters/redis/node-user-acl.ts';
import { agentScripts } from '../../../../src/adapters/lua/registry.ts';
import { loadMissing } from '../../../../src/adapters/redis/script-preload.ts';
import { evalshaFirst } from '../../../../src/adapters/redis/lua-script.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { readKeys, type Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { startPrivateRedis, type PrivateRedis } from '../../../support/redis-server.ts';

// Issue 44: what node-a can write with its own Redis user (the receiver's per-node ACL user: its
// queue's keys only) and its agent key (its queue's only, as enrolment hands it out), and what the
// real receiver then shows, against a real redis-server.
// - Item 6: node-a appends and seals, in its own audit list, `mode-enforce` in alice@example.com's
//   name: its seal holds, but GET /v1/controls/audit shows it not verified, saying why; node-a's
//   own entries still verify.
// - LOW: node-a deletes its audit list and starts again at 1: a receiver started afterwards
//   (nothing in its memory) still reports the list as started again, because the receivers keep
//   what they saw in a key node-a's user cannot write.
// - LOW: node-a rewrites a job record in its queue (and a parked record) to name node-b: the jobs
//   API and the console's incident show it as node-a's, saying what the record claims.

const NODE = 'node-a';
const QUEUE = nodeQueueName(NODE);
const PASSWORD = 'node-a-password-0123456789';
const TOKEN = 'node-own-records-webhook-token-0123';
const silent = createLogger('test', 'silent');

interface AuditAnswer {
  audit: Array<{ by: string; action: string; target: string; seq?: number; verified?: boolean; unverifiedWhy?: string }>;
  problems: Array<{ list: string; missing: string[]; restartedBelow?: number }>;
}

describe("a node's audit list, as its own Redis user and key can write it", () => {
  const prefix = uniquePrefix('auditlist');
  let redis: PrivateRedis;
  let admin: Redis;
  let nodeA: Redis;
  let ops: Operators;
  let receiver: Receiver | undefined;
  /** What node-a's enrolled agent holds: its queue's node-agent work key, nothing else. */
  let agentStore: () => ControlsStore;

  const startOne = async (): Promise<Receiver> =>
    startReceiver(testConfig({ redisUrl: redis.url, queuePrefix: prefix, tokens: [TOKEN] }), { operatorKubeConfig: ops.api.kubeConfig(), log: silent });
  const audit = async (): Promise<AuditAnswer> => (await getJson(`${receiver!.url}/v1/controls/audit?limit=200`, ops.token('oncall-olga'))) as AuditAnswer;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.url);
    const sha = createHash('sha256').update(PASSWORD).digest('hex');
    await admin.call('ACL', 'SETUSER', nodeUserName(NODE), ...nodeUserRules(prefix, NODE, sha));
    // The receiver records a node's queue at enrolment.
    await admin.sadd(knownQueuesKey(prefix), QUEUE);
    // What the receiver does at its start (script-preload.ts): the node's user may only EVALSHA them.
    await loadMissing(admin, agentScripts());
    // As the agent connects (redis.ts connect()): scripts by EVALSHA only, which is all the node's user may run.
    nodeA = evalshaFirst(new Redis(`redis://${nodeUserName(NODE)}:${PASSWORD}@127.0.0.1:${redis.port}`, { maxRetriesPerRequest: 0 }));
    const roots = readKeys(TEST_KEYS_DIR);
    const [rootName, root] = [...roots].find(([n]) => n.startsWith('node-agent.'))!;
    const key = workKeyOf(root, 'node-agent', QUEUE);
    const ring: Keyring = { verify: new Map([[rootName, key]]), signing: { role: 'node-agent', kid: rootName.split('.')[1]!, key }, scope: QUEUE };
    // A new store each time: an appender that remembers nothing, as after the agent restarts.
    agentStore = () => new ControlsStore(nodeA, prefix, () => new Date(), { allowUnsigned: false, audit: { sealer: sealerOf(ring)! } });
    ops = await startOperators();
    receiver = await startOne();
  });
  afterAll(async () => {
    await receiver?.close();
    await ops?.close();
    nodeA?.disconnect();
    admin?.disconnect();
    await redis?.destroy();
  });

  it("shows an entry node-a sealed in its own list in an operator's name as not verified, saying why; node-a's own entries verify", async () => {
    const store = agentStore();
    await store.audit('work-refused', 'job/j1', { by: NODE, why: 'its own' }, QUEUE);
    await store.audit('mode-enforce', 'runbook/residual-multipath-cleanup', { by: 'alice@example.com', why: 'go' }, QUEUE);
    await store.audit('work-refused', 'job/j3', { by: NODE, why: 'its own' }, QUEUE);
    const r = await audit();
    const forged = r.audit.find((e) => e.by === 'alice@example.com');
    expect(forged).toMatchObject({ action: 'mode-enforce', seq: 2, verified: false });
    expect(forged!.unverifiedWhy).toMatch(/only the agent of node node-a writes this list: an operator's decisions are recorded in the fleet list only/);
    expect(r.audit.filter((e) => e.by === NODE).map((e) => [e.target, e.verified])).toEqual([
      ['job/j3', true],
      ['job/j1', true],
    ]);
    // Its number was node-a's to use: no entry is missing.
    expect(r.problems).toEqual([]);
  });

  it('reports a list node-a deleted and started again at 1 to a receiver started afterwards, also once it has passed the old number', async () => {
    const list = queueControlKeys(prefix, QUEUE).audit;
    // Everything node-a's user may do to hide it: its list, and the receivers' marks (refused).
    await nodeA.del(list);
    await expect(nodeA.hset(auditMarksKey(prefix), QUEUE, '0')).rejects.toThrow(/NOPERM/);
    await expect(nodeA.del(auditMarksKey(prefix))).rejects.toThrow(/NOPERM/);
    await agentStore().audit('work-refused', 'job/after', { by: NODE, why: 'a fresh start' }, QUEUE);
    // A receiver with nothing in its memory.
    await receiver!.close();
    receiver = await startOne();
    let r = await audit();
    expect(r.audit.find((e) => e.target === 'job/after')).toMatchObject({ seq: 1, verified: true });
    expect(r.problems).toEqual([{ list: QUEUE, missing: [], restartedBelow: 3 }]);
    // Written on past the number read before: that number's entry is another one.
    const store = agentStore();
    for (const n of [2, 3, 4]) await store.audit('work-refused', `job/after${n}`, { by: NODE, why: 'more' }, QUEUE);
    await receiver!.close();
    receiver = await startOne();
    r = await audit();
    expect(r.problems).toEqual([{ list: QUEUE, missing: [], restartedBelow: 3 }]);
  });

  it("shows a job record node-a rewrote to name node-b as node-a's, saying what the record claims", async () => {
    const stored = await post(`${receiver!.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(NODE, 'resolved', 'fpnodeownrecords')]), TOKEN);
    expect(stored.status).toBe(202);
    const id = stored.json.accepted[0].id as string;
    const jobKey = `${prefix}:${QUEUE}:${id}`;
    const data = JSON.parse((await nodeA.hget(jobKey, 'data'))!) as { target: { node: string } };
    // What node-a's own user may do to its own queue's records.
    await nodeA.hset(jobKey, 'data', JSON.stringify({ ...data, target: { ...data.target, node: 'node-b' } }));
    const parked = {
      jobId: id,
      queue: QUEUE,
      runbook: 'residual-multipath-cleanup',
      node: 'node-b',
      reason: 'paused',
      why: 'x',
      since: new Date().toISOString(),
    };
    await nodeA.hset(queueControlKeys(prefix, QUEUE).parked, id, JSON.stringify(parked));
    const token = ops.token('oncall-olga');

    const job = await getJson(`${receiver!.url}/v1/jobs/${id}`, token);
    expect(job).toMatchObject({ id, queue: QUEUE, node: NODE, recordNames: 'node-b' });
    const incident = await getJson(`${receiver!.url}/v1/jobs/${id}/incident`, token);
    expect(incident.incident).toMatchObject({ node: NODE, recordNames: 'node-b' });
    const listed = (await getJson(`${receiver!.url}/v1/jobs`, token)).jobs.find((j: { id: string }) => j.id === id);
    expect(listed).toMatchObject({ node: NODE, recordNames: 'node-b' });
    expect((await getJson(`${receiver!.url}/v1/jobs?node=node-b`, token)).jobs).toEqual([]);
    const controls = await getJson(`${receiver!.url}/v1/controls`, token);
    expect(controls.parked.find((p: { jobId: string }) => p.jobId === id)).toMatchObject({ node: NODE });
  });
});
