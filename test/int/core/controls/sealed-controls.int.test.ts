import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishedExposition } from '../../../../src/adapters/stats/job-stats.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { queueControlKeys, controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import { controlsExposition, controlsSummary } from '../../../../src/adapters/controls/status.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { trustFromConfig } from '../../../../src/core/trust/from-config.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, sealedJobs, toyRunbook, toyStep, type ToyStep } from '../../../support/controls-harness.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { waitFor } from '../../../support/wait.ts';

// Issue 20: "a control record written straight into Redis changes nothing". Modes, pauses and
// approval decisions are sealed by the API (OperatorActions with the receiver's key, as the
// receiver wires it); the agent (the real createNodeAgent, verifying with the test keys) ignores
// any record without a valid seal, reports it (audit trail, metric), and ignores an old sealed
// record put back after a newer one, or after its field was cleared (a replay).

const silent = createLogger('test', 'silent');
const RUNBOOK = 'residual-multipath-cleanup';

const step = toyStep;

describe('control records written straight into Redis change nothing', () => {
  const prefix = uniquePrefix('sealedctl');
  const keys = controlKeys(prefix);
  let redis: Redis;
  let api: OperatorActions;
  const agents: RunbookWorker[] = [];
  let stored: TestJobs;
  const base = (over: Partial<Config> = {}): Config => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, ...fastControls, ...over });

  beforeAll(() => {
    redis = new Redis(redisUrl());
    stored = testJobs(redis, prefix);
    const config = base();
    const trust = trustFromConfig(config, 'receiver');
    api = new OperatorActions({
      redis,
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
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  /** A job sealed by the receiver, straight onto the node's queue; resolves when it finished or parked. */
  const run = sealedJobs(
    () => stored,
    () => redis,
    prefix,
    'sealedctl',
  );
  const agent = (node: string, steps: ToyStep[], over: Partial<Config> = {}) => {
    const toy = toyRunbook(() => ({ kind: 'steps', summary: 'toy', steps }));
    agents.push(
      createNodeAgent({
        config: base({ nodeName: node, stateDir: `/tmp/vm-sealedctl-${prefix}-${node}`, ...over }),
        registry: toy.registry,
        log: silent,
      }),
    );
    return toy;
  };
  const audit = async () => (await api.store.auditLog(500)).map((e) => `${e.action} ${e.target} ${e.by}`);

  it("a forged enforce override is ignored and reported; the API's override counts", async () => {
    const toy = agent('ctl-mode', [step('m1', { destructive: false })]);
    await redis.hset(keys.modes, `runbook/${RUNBOOK}`, JSON.stringify({ mode: 'enforce', by: 'alice', why: 'one HSET', at: new Date().toISOString() }));
    const forged = await run('ctl-mode');
    expect(forged.returnvalue).toMatchObject({ mode: 'dry-run', outcome: 'planned' });
    expect(await toy.ran('/w/m1')).toBe(false);
    expect(await audit()).toContain(`control-refused mode/runbook/${RUNBOOK} ctl-mode`);
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="mode",reason="unsigned"\} [1-9]/);
    // The API's own view does not show it either.
    expect((await api.view()).modes.overrides.runbooks[RUNBOOK]).toBeUndefined();

    await api.setMode({ runbook: RUNBOOK }, 'enforce', { by: 'alice', why: 'INC-1' });
    const sealed = await redis.hget(keys.modes, `runbook/${RUNBOOK}`);
    const real = await run('ctl-mode');
    expect(real.returnvalue).toMatchObject({ mode: 'enforce', outcome: 'succeeded' });

    // Cleared through the API, then the old sealed record put back: a replay, ignored.
    await api.setMode({ runbook: RUNBOOK }, null, { by: 'alice' });
    await run('ctl-mode');
    await redis.hset(keys.modes, `runbook/${RUNBOOK}`, sealed!);
    const replayed = await run('ctl-mode');
    expect(replayed.returnvalue).toMatchObject({ mode: 'dry-run' });
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="mode",reason="replayed"\} [1-9]/);
    await redis.hdel(keys.modes, `runbook/${RUNBOOK}`);
  });

  it("the operator's earlier enforce record, put back after dry-run was set, changes nothing, also after the agent restarts; a pause deleted from Redis stands", async () => {
    const first = agent('ctl-replay', [step('r1', { destructive: false })]);
    const field = `runbook/${RUNBOOK}`;
    await api.setMode({ runbook: RUNBOOK }, 'enforce', { by: 'alice', why: 'INC-2' });
    const enforce = await redis.hget(keys.modes, field);
    expect((await run('ctl-replay')).returnvalue).toMatchObject({ mode: 'enforce' });
    expect(await first.ran('/w/r1')).toBe(true);
    await api.setMode({ runbook: RUNBOOK }, 'dry-run', { by: 'alice', why: 'hands off' });
    expect((await run('ctl-replay')).returnvalue).toMatchObject({ mode: 'dry-run' });
    // With the receiver's Redis password: the sealed enforce record written back.
    await redis.hset(keys.modes, field, enforce!);
    expect((await run('ctl-replay')).returnvalue).toMatchObject({ mode: 'dry-run' });
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="mode",reason="replayed"\} [1-9]/);
    // The agent restarts (its STATE_DIR stays): still dry-run, the replayed record still in Redis.
    await agents.pop()!.close();
    agent('ctl-replay', [step('r1', { destructive: false })]);
    expect((await run('ctl-replay')).returnvalue).toMatchObject({ mode: 'dry-run' });
    await api.setMode({ runbook: RUNBOOK }, null, { by: 'alice' });

    // A pause deleted straight from Redis (no tombstone) is not a resume.
    await api.pause('ctl-replay', { by: 'bob', why: 'storage maintenance' });
    await run('ctl-replay', 'parked');
    await redis.hdel(keys.pause, 'node/ctl-replay');
    const stillHeld = await run('ctl-replay', 'parked');
    expect((stillHeld.progress as { parked: { why: string } }).parked.why).toMatch(/paused by bob/);
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="pause",reason="removed"\} [1-9]/);
    // The API's resume is a sealed tombstone, and it lifts it.
    expect(await api.resume('ctl-replay', { by: 'bob' })).toMatchObject({ changed: true });
    expect(JSON.parse((await redis.hget(keys.pause, 'node/ctl-replay'))!)).toMatchObject({ cleared: true, by: 'bob' });
  });

  it('the receiver seals standing records again before they lapse, keeping their generation; a forged record is not sealed', async () => {
    await api.setMode({ runbook: 'rbd-stale-mapping' }, 'enforce', { by: 'carol', why: 'INC-3' });
    const before = JSON.parse((await redis.hget(keys.modes, 'runbook/rbd-stale-mapping'))!);
    await redis.hset(keys.modes, 'runbook/forged', JSON.stringify({ mode: 'enforce', by: 'mallory', why: '', at: 'now', gen: 1 }));
    // Fresh seals are left alone; near their end they are sealed again.
    expect(await api.store.resealStanding()).toBe(0);
    const later = new OperatorActions({
      redis,
      prefix,
      jobs: {
        promote: () => {
          throw new Error('unused');
        },
      },
      caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1000 },
      approvalTtlMs: 3_600_000,
      configuredModes: { default: 'dry-run', runbooks: {} },
      trust: {
        sealer: sealerOf(keyringFor('receiver', readKeys(TEST_KEYS_DIR)), () => Date.now() + 11 * 60_000)!,
        ring: keyringFor('receiver', readKeys(TEST_KEYS_DIR)),
        allowUnsigned: false,
        now: () => Date.now() + 11 * 60_000,
      },
      now: () => new Date(Date.now() + 11 * 60_000),
    });
    expect(await later.store.resealStanding()).toBeGreaterThanOrEqual(1);
    const after = JSON.parse((await redis.hget(keys.modes, 'runbook/rbd-stale-mapping'))!);
    expect(after.gen).toBe(before.gen);
    expect(after.seal.exp).toBeGreaterThan(before.seal.exp);
    expect(JSON.parse((await redis.hget(keys.modes, 'runbook/forged'))!).seal).toBeUndefined();
    await redis.hdel(keys.modes, 'runbook/forged');
    await api.setMode({ runbook: 'rbd-stale-mapping' }, null, { by: 'carol' });
  });

  it('a sealed override moved to another field is ignored', async () => {
    agent('ctl-moved', [step('x1', { destructive: false })]);
    await api.setMode({ node: 'elsewhere' }, 'enforce', { by: 'alice' });
    const sealed = await redis.hget(keys.modes, 'node/elsewhere');
    await redis.hset(keys.modes, `runbook/${RUNBOOK}`, sealed!);
    const j = await run('ctl-moved');
    expect(j.returnvalue).toMatchObject({ mode: 'dry-run' });
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="mode",reason="bad-mac"\} [1-9]/);
    await redis.hdel(keys.modes, `runbook/${RUNBOOK}`, 'node/elsewhere');
  });

  it("a forged pause does not stop a job; the API's pause does", async () => {
    const toy = agent('ctl-pause', [step('p1', { destructive: false })], { runbookModes: { [RUNBOOK]: 'enforce' } });
    await redis.hset(keys.pause, 'node/ctl-pause', JSON.stringify({ by: 'mallory', why: '', at: new Date().toISOString() }));
    const forged = await run('ctl-pause');
    expect(forged.returnvalue).toMatchObject({ outcome: 'succeeded' });
    expect(await toy.ran('/w/p1')).toBe(true);
    // /readyz and /metrics read pauses through the receiver's store: the forged one is not there.
    expect((await controlsSummary(redis, prefix, api.store)).paused.nodes).not.toContain('ctl-pause');
    expect(controlsExposition(await controlsSummary(redis, prefix, api.store))).not.toContain('node/ctl-pause');
    await redis.hdel(keys.pause, 'node/ctl-pause');

    await api.pause('ctl-pause', { by: 'bob', why: 'maintenance' });
    const parked = await run('ctl-pause', 'parked');
    expect((parked.progress as { parked: { reason: string } }).parked.reason).toBe('paused');
    expect(controlsExposition(await controlsSummary(redis, prefix, api.store))).toContain('volume_medic_paused{scope="node/ctl-pause"} 1');
    await api.resume('ctl-pause', { by: 'bob' });
  });

  it("an approval written straight into Redis does not run the step; the API's approval does", async () => {
    const toy = agent('ctl-approve', [step('safe', { destructive: false }), step('release', { risk: 'high' })], {
      runbookModes: { [RUNBOOK]: 'enforce' },
    });
    const parked = await run('ctl-approve', 'parked');
    const id = parked.id!;
    const key = queueControlKeys(prefix, parked.queue).approval(id);
    const pending = JSON.parse((await redis.get(key))!) as Record<string, unknown>;
    expect(pending['state']).toBe('pending');
    await redis.set(
      key,
      JSON.stringify({
        ...pending,
        state: 'approved',
        decidedBy: 'mallory',
        decidedAt: new Date().toISOString(),
        validUntil: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    );
    await stored.store.promote(parked.queue, id);
    // Looked again (every 0.3 s) and still waits: the forged approval was ignored and replaced by a new request.
    await waitFor(
      'the forged approval to be reported',
      async () => ((await audit()).includes(`control-refused approval/${id} ctl-approve`) ? true : undefined),
      5_000,
    );
    expect(await toy.ran('/w/release')).toBe(false);
    expect(JSON.parse((await redis.get(key))!).state).toBe('pending');

    const ok = await api.approve(id, { by: 'carol', why: 'checked' });
    expect(ok.ok).toBe(true);
    await waitFor('the approved step to run', async () => ((await toy.ran('/w/release')) ? true : undefined), 10_000);
  });

  it('a request reworded in Redis and then approved by an operator does not run the real step: the agent asks again in its own words', async () => {
    const toy = agent('ctl-reword', [step('look', { destructive: false }), step('release', { risk: 'high' })], {
      runbookModes: { [RUNBOOK]: 'enforce' },
    });
    const parked = await run('ctl-reword', 'parked');
    const id = parked.id!;
    const key = queueControlKeys(prefix, parked.queue).approval(id);
    const pending = JSON.parse((await redis.get(key))!) as { steps: { id: string; description: string; why: string }[] };
    const real = pending.steps[0]!.description;
    // With the node agent's Redis user: the wording the operator will read, rewritten.
    await redis.set(
      key,
      JSON.stringify({
        ...pending,
        summary: 'read-only re-scan',
        steps: pending.steps.map((x) => ({ ...x, description: 'multipath -ll (read-only)' })),
      }),
    );
    const ok = await api.approve(id, { by: 'carol', why: 'only a re-scan' });
    expect(ok.ok).toBe(true);
    await stored.store.promote(parked.queue, id);
    await waitFor(
      "a new request in the agent's own words",
      async () => {
        const rec = JSON.parse((await redis.get(key))!) as { state: string; steps: { description: string }[] };
        return rec.state === 'pending' && rec.steps[0]?.description === real ? true : undefined;
      },
      10_000,
    );
    expect(await toy.ran('/w/release')).toBe(false);
    // Approved as worded now, it runs.
    expect((await api.approve(id, { by: 'carol', why: 'read the real step' })).ok).toBe(true);
    await waitFor('the approved step to run', async () => ((await toy.ran('/w/release')) ? true : undefined), 10_000);
  });

  it("a rejection written straight into Redis under a made-up name does not fail the job; the API's rejection does", async () => {
    agent('ctl-rejectf', [step('release', { risk: 'high' })], { runbookModes: { [RUNBOOK]: 'enforce' } });
    const parked = await run('ctl-rejectf', 'parked');
    const id = parked.id!;
    const key = queueControlKeys(prefix, parked.queue).approval(id);
    const pending = JSON.parse((await redis.get(key))!) as Record<string, unknown>;
    await redis.set(key, JSON.stringify({ ...pending, state: 'rejected', decidedBy: 'the-ceo', decidedAt: new Date().toISOString(), why: 'no' }));
    await stored.store.promote(parked.queue, id);
    await waitFor(
      'the forged rejection to be reported',
      async () => ((await audit()).includes(`control-refused approval/${id} ctl-rejectf`) ? true : undefined),
      5_000,
    );
    const still = await stored.get(parked.queue, id);
    expect(still?.failedReason).toBeFalsy();
    await waitFor('a new request', async () => (JSON.parse((await redis.get(key))!).state === 'pending' ? true : undefined), 5_000);
    expect((await api.reject(id, { by: 'dave', why: 'live LUN' })).ok).toBe(true);
    const failed = await waitFor(
      'the job failed as rejected',
      async () => {
        const j = await stored.get(parked.queue, id);
        return j?.failedReason ? j : undefined;
      },
      10_000,
    );
    expect(failed.failedReason).toMatch(/approval rejected by dave .*live LUN/);
  });
});
