import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishedExposition } from '../../../../src/adapters/stats/job-stats.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { queueControlKeys, controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import { sealRecord } from '../../../../src/core/controls/sealed-records.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { trustFromConfig } from '../../../../src/core/trust/from-config.ts';
import { controlSealer } from '../../../../src/core/trust/control-keys.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, sealedJobs, toyRunbook, toyStep, type ToyStep } from '../../../support/controls-harness.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';

// Issue 30, attack 1 (controls): with the control key pair configured (the chart's default),
// root on a node holds everything the node agent mounts, the receiver's HMAC key included
// (agents verify work with it), and still cannot make a control an agent accepts: modes and
// approval decisions sealed with that HMAC key are refused; the API's, signed with the receiver's
// ECDSA key, count.

const silent = createLogger('test', 'silent');
const RUNBOOK = 'residual-multipath-cleanup';

describe("operator controls signed with the receiver's control key", () => {
  const prefix = uniquePrefix('ctlkeys');
  const keys = controlKeys(prefix);
  const files = writeControlKeys();
  let redis: Redis;
  let api: OperatorActions;
  const agents: RunbookWorker[] = [];
  let stored: TestJobs;
  const base = (over: Partial<Config> = {}): Config =>
    testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, ...fastControls, controlVerifyCertFile: files.certFile, ...over });
  /** What root on a node can make: a control sealed with the receiver's HMAC key, which the agent's mounted keys hold. */
  const nodeForged = (kind: 'mode' | 'approval', field: string, record: object) =>
    sealRecord({ sealer: testSealer('receiver'), allowUnsigned: false }, kind, field, record).json;

  beforeAll(() => {
    redis = new Redis(redisUrl());
    stored = testJobs(redis, prefix);
    const trust = trustFromConfig(base({ controlSigningKeyFile: files.keyFile }), 'receiver');
    expect(trust.controls.sealer).toBeDefined();
    api = new OperatorActions({
      redis,
      prefix,
      jobs: stored.store,
      caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1000 },
      approvalTtlMs: 3_600_000,
      configuredModes: { default: 'dry-run', runbooks: {} },
      trust: { sealer: trust.controls.sealer!, ring: trust.controls.ring, allowUnsigned: false },
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
    'ctlkeys',
  );
  const agent = (node: string, steps: ToyStep[], over: Partial<Config> = {}) => {
    const toy = toyRunbook(() => ({ kind: 'steps', summary: 'toy', steps }));
    agents.push(
      createNodeAgent({
        config: base({ nodeName: node, stateDir: `/tmp/vm-ctlkeys-${prefix}-${node}`, ...over }),
        registry: toy.registry,
        log: silent,
      }),
    );
    return toy;
  };

  it("the agent holds the receiver's HMAC key (it verifies work with it), and an enforce sealed with it is refused; the API's counts", async () => {
    expect(keyringFor('node-agent', readKeys(TEST_KEYS_DIR)).verify.has('receiver.test')).toBe(true);
    const toy = agent('ctlkeys-mode', [toyStep('m1', { destructive: false })]);
    await redis.hset(
      keys.modes,
      `runbook/${RUNBOOK}`,
      nodeForged('mode', `runbook/${RUNBOOK}`, {
        mode: 'enforce',
        by: 'root-on-node-a',
        why: '',
        at: new Date().toISOString(),
        gen: Date.now(),
      }),
    );
    expect((await run('ctlkeys-mode')).returnvalue).toMatchObject({ mode: 'dry-run', outcome: 'planned' });
    expect(await toy.ran('/w/m1')).toBe(false);
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="mode",reason="unknown-key"\} [1-9]/);

    await api.setMode({ runbook: RUNBOOK }, 'enforce', { by: 'alice', why: 'INC-9' });
    expect(JSON.parse((await redis.hget(keys.modes, `runbook/${RUNBOOK}`))!).seal).toMatchObject({ alg: 'es256', iss: 'receiver' });
    expect((await run('ctlkeys-mode')).returnvalue).toMatchObject({ mode: 'enforce', outcome: 'succeeded' });
    expect(await toy.ran('/w/m1')).toBe(true);
    await api.setMode({ runbook: RUNBOOK }, null, { by: 'alice' });
  });

  it("an approval sealed with the receiver's HMAC key does not run the high-risk step; the API's approval does", async () => {
    const toy = agent('ctlkeys-approve', [toyStep('release', { risk: 'high' })], { runbookModes: { [RUNBOOK]: 'enforce' } });
    const parked = await run('ctlkeys-approve', 'parked');
    const id = parked.id!;
    const pending = JSON.parse((await redis.get(queueControlKeys(prefix, parked.queue).approval(id)))!) as Record<string, unknown>;
    const approved = {
      ...pending,
      state: 'approved',
      decidedBy: 'root-on-node-a',
      decidedAt: new Date().toISOString(),
      validUntil: new Date(Date.now() + 3_600_000).toISOString(),
    };
    await redis.set(queueControlKeys(prefix, parked.queue).approval(id), nodeForged('approval', id, approved));
    await stored.store.promote(parked.queue, id);
    await waitFor(
      'the forged approval replaced by a new request',
      async () => (JSON.parse((await redis.get(queueControlKeys(prefix, parked.queue).approval(id)))!).state === 'pending' ? true : undefined),
      10_000,
    );
    expect(await toy.ran('/w/release')).toBe(false);
    expect((await api.approve(id, { by: 'carol', why: 'checked' })).ok).toBe(true);
    await waitFor('the approved step to run', async () => ((await toy.ran('/w/release')) ? true : undefined), 10_000);
  });

  it('the receiver seals standing controls again with the control key, keeping the generation', async () => {
    await api.setMode({ runbook: 'rbd-stale-mapping' }, 'enforce', { by: 'carol', why: 'INC-10' });
    const before = JSON.parse((await redis.hget(keys.modes, 'runbook/rbd-stale-mapping'))!);
    const later = () => Date.now() + 11 * 60_000;
    const trust = trustFromConfig(base({ controlSigningKeyFile: files.keyFile }), 'receiver');
    const laterApi = new OperatorActions({
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
      trust: { sealer: controlSealer(files.keyFile, later), ring: trust.controls.ring, allowUnsigned: false, now: later },
      now: () => new Date(later()),
    });
    expect(await laterApi.store.resealStanding()).toBeGreaterThanOrEqual(1);
    const after = JSON.parse((await redis.hget(keys.modes, 'runbook/rbd-stale-mapping'))!);
    expect(after).toMatchObject({ gen: before.gen, seal: { alg: 'es256' } });
    expect(after.seal.exp).toBeGreaterThan(before.seal.exp);
    await api.setMode({ runbook: 'rbd-stale-mapping' }, null, { by: 'carol' });
  });

  it('a receiver that could check controls but not sign them, or sign but not check, does not start (exit 2), and an agent needs only the certificate', () => {
    expect(() => trustFromConfig(base(), 'receiver')).toThrow(/CONTROL_VERIFY_CERT_FILE is set but CONTROL_SIGNING_KEY_FILE is not/);
    expect(() => trustFromConfig(base({ controlVerifyCertFile: undefined, controlSigningKeyFile: files.keyFile }), 'receiver')).toThrow(
      /CONTROL_SIGNING_KEY_FILE is set without CONTROL_VERIFY_CERT_FILE/,
    );
    const agentTrust = trustFromConfig(base(), 'node-agent');
    expect(agentTrust.controls.sealer).toBeUndefined();
    expect([...agentTrust.controls.ring.verify.keys()]).toEqual([]);
    expect(agentTrust.controls.ring.publicKeys?.size).toBe(1);
  });
});
