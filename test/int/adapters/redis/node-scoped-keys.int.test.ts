import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys, queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { readAgentRuns } from '../../../../src/adapters/jobstore/agent-runs.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { trustFromConfig } from '../../../../src/core/trust/from-config.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, sealedJobs, toyRunbook, toyStep } from '../../../support/controls-harness.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { agentScripts } from '../../../../src/adapters/lua/registry.ts';
import { loadMissing } from '../../../../src/adapters/redis/script-preload.ts';
import { type AclRedis, startAclRedis } from '../../../support/acl-redis.ts';

// Issue 30: a node agent with its own Redis user, whose keys are its queue's only
// (`~<prefix>:vm-node-{a}:*`, plus read-only modes and pauses, and for now the shared breakers
// and job statistics), on a real redis-server: the REAL agent parks a job for approval, the
// API approves it, the step runs, with no command refused (ACL LOG). And the same user cannot
// write node b's approval record, parked hash or audit list, the fleet audit list, the old
// shared keys or the queue registry.

const prefix = uniquePrefix('nodekeys');
const RUNBOOK = 'residual-multipath-cleanup';
const silent = createLogger('test', 'silent');
const NODE_USER = 'vmtest-node-a';

/** The chart's node-agent user's commands, with issue 30's per-node key patterns instead of its keys. */
function nodeUserLine(node: string): string {
  const rendered = renderRedisAcl({ prefix, passwords: { receiver: 'r', 'cluster-worker': 'c', 'node-agent': 'n' } });
  const agentLine = rendered.split('\n').find((l) => l.startsWith('user volume-medic-node-agent '));
  if (!agentLine) throw new Error('no node-agent user in the ACL template');
  const commands = agentLine.split(' ').filter((t) => /^[+-]/.test(t));
  const keys = [
    `~${prefix}:${nodeQueueName(node)}:*`,
    `~${prefix}:vm:stats`,
    `~${prefix}:vm:ctl:breaker:*`,
    `%R~${prefix}:vm:ctl:modes`,
    `%R~${prefix}:vm:ctl:pause`,
  ];
  return `user ${NODE_USER} on >pw-node-a resetkeys resetchannels ${keys.join(' ')} ${commands.join(' ')}`;
}

let redis: AclRedis | undefined;
let dir: string;
let port: number;
let admin: Redis;
let nodeA: Redis;
let api: OperatorActions;
let stored: TestJobs;
const agents: RunbookWorker[] = [];

beforeAll(async () => {
  redis = await startAclRedis({ acl: `user default off resetkeys resetchannels -@all\n${nodeUserLine('a')}\n`, name: 'vm-nodekeys' });
  ({ dir, port } = redis);
  admin = new Redis(redis.adminUrl);
  stored = testJobs(admin, prefix);
  // What the receiver does at its start (script-preload.ts): the node's user may only EVALSHA them.
  await loadMissing(admin, agentScripts());
  nodeA = new Redis(`redis://${NODE_USER}:pw-node-a@127.0.0.1:${port}`, { maxRetriesPerRequest: 0 });
  const trust = trustFromConfig(testConfig({ redisUrl: redis.adminUrl, queuePrefix: prefix }), 'receiver');
  // The API, as the receiver runs it (its own user may write every control key).
  api = new OperatorActions({
    redis: admin,
    prefix,
    jobs: stored.store,
    caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1000 },
    approvalTtlMs: 3_600_000,
    configuredModes: { default: 'dry-run', runbooks: {} },
    trust: { sealer: trust.sealer!, ring: trust.ring, allowUnsigned: false },
  });
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  await stored?.close();
  nodeA?.disconnect();
  admin?.disconnect();
  await redis?.stop();
});

/** ACL LOG entries (refusals) of the node's user since the last reset. */
async function refusals(): Promise<string[]> {
  const log = (await admin.acl('LOG', '128')) as unknown[][];
  return log
    .map((entry) => {
      const e: Record<string, unknown> = {};
      for (let i = 0; i + 1 < entry.length; i += 2) e[String(entry[i])] = entry[i + 1];
      return `${String(e['username'])}: ${String(e['reason'])} ${String(e['object'])}`;
    })
    .filter((s) => s.startsWith(NODE_USER));
}

describe("a node agent with a Redis user of its own queue's keys", () => {
  it('parks a job for approval, the API approves it, and the step runs, with no command refused', async () => {
    await admin.acl('LOG', 'RESET');
    const toy = toyRunbook(() => ({ kind: 'steps', summary: 'toy', steps: [toyStep('release', { risk: 'high' })] }));
    agents.push(
      createNodeAgent({
        config: testConfig({
          redisUrl: `redis://${NODE_USER}:pw-node-a@127.0.0.1:${port}`,
          queuePrefix: prefix,
          nodeName: 'a',
          stateDir: `${dir}/state-a`,
          runbookModes: { [RUNBOOK]: 'enforce' },
          ...fastControls,
        }),
        registry: toy.registry,
        log: silent,
      }),
    );
    // The receiver's side: the job stored on node a's queue, the queue recorded in the registry.
    const run = sealedJobs(
      () => stored,
      () => admin,
      prefix,
      'nodekeys',
    );
    const parked = await run('a', 'parked');
    const id = parked.id!;
    const mine = queueControlKeys(prefix, nodeQueueName('a'));
    expect(JSON.parse((await admin.get(mine.approval(id)))!)).toMatchObject({ state: 'pending', queue: nodeQueueName('a') });
    expect(await admin.exists(controlKeys(prefix).legacyApproval(id))).toBe(0);
    expect((await api.pendingApprovals()).map((a) => a.jobId)).toEqual([id]);
    expect((await api.store.parkedJobs()).map((p) => [p.jobId, p.reason])).toEqual([[id, 'approval']]);

    const decided = await api.approve(id, { by: 'carol', why: 'checked' });
    expect(decided.ok).toBe(true);
    await waitFor('the approved step ran', async () => ((await toy.ran('/w/release')) ? true : undefined), 10_000);
    await waitFor('the job finished', async () => ((await stored.get(nodeQueueName('a'), id))?.finishedOn ? true : undefined), 10_000);
    expect(await api.store.parkedJobs()).toEqual([]);
    const trail = (await api.audit(100)).map((e) => `${e.action} ${e.target} ${e.by}`);
    expect(trail).toContain(`approval-requested job/${id} a`);
    expect(trail).toContain(`approve job/${id} carol`);
    // The request under node a's own list, the decision in the fleet's: one view, two writers.
    expect((await admin.lrange(mine.audit, 0, -1)).some((e) => e.includes('approval-requested'))).toBe(true);
    expect((await admin.lrange(controlKeys(prefix).audit, 0, -1)).some((e) => e.includes('"approve"'))).toBe(true);
    // Its announcement of what it runs, written at its start under its own queue (the receiver reads it: ingest/agent-gate.ts).
    expect((await readAgentRuns(admin, prefix, nodeQueueName('a')))?.runbooks).toEqual(Object.keys(toy.registry));
    expect(await refusals()).toEqual([]);
  });

  it("refuses node a's user every write to node b's records, the fleet audit list, the old shared keys and the queue registry", async () => {
    const b = queueControlKeys(prefix, nodeQueueName('b'));
    const fleet = controlKeys(prefix);
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ["node b's approval record", () => nodeA.set(b.approval('job-b'), '{"state":"approved"}')],
      ["node b's parked hash", () => nodeA.hdel(b.parked, 'job-b')],
      ["node b's parked hash (write)", () => nodeA.hset(b.parked, 'job-b', '{}')],
      ["node b's audit list", () => nodeA.del(b.audit)],
      ["node b's audit list (push)", () => nodeA.lpush(b.audit, '{}')],
      ['the fleet audit list', () => nodeA.del(fleet.audit)],
      ['the fleet audit list (push)', () => nodeA.lpush(fleet.audit, '{}')],
      ['the old shared approval key', () => nodeA.set(fleet.legacyApproval('job-b'), '{}')],
      ['the old shared parked hash', () => nodeA.hset(fleet.legacyParked, 'job-b', '{}')],
      ['the queue registry', () => nodeA.sadd(knownQueuesKey(prefix), 'vm-node-{z}')],
      ['a mode', () => nodeA.hset(fleet.modes, 'runbook/x', '{}')],
    ];
    for (const [what, attempt] of attempts) await expect(attempt(), what).rejects.toThrow(/NOPERM/);
    // ...while its own keys stay writable (what its worker needs).
    const a = queueControlKeys(prefix, nodeQueueName('a'));
    await nodeA.lpush(a.audit, '{}');
    await nodeA.hset(a.parked, 'x', '{}');
    await nodeA.set(a.approval('x'), '{}');
  });
});
