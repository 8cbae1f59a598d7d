import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import type { UntrustedControl } from '../../../../src/core/controls/sealed-records.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';

// Issue 44, item 7: every receiver replica seals the standing modes and pauses again before their
// 15-minute seals lapse (ControlsStore.resealStanding). A copy of an enforce record put back (with
// the receiver's Redis password) after the operator set dry-run has a valid seal of its own: sealed
// again, it would stand for good for every reader that never saw the dry-run, instead of lapsing.
// A record older than the field's last decision (this replica's memory, or the field's generation
// counter that every replica's writes bump) is left to lapse.

const RUNBOOK = 'residual-multipath-cleanup';

describe('the re-seal of standing records', () => {
  const prefix = uniquePrefix('relayreseal');
  const keys = controlKeys(prefix);
  const field = `runbook/${RUNBOOK}`;
  let redis: Redis;
  /** A receiver replica's store, its clock `later()` ms ahead of now (moved by the test). */
  const replica = (later: () => number, refused: UntrustedControl[] = []) => {
    const ring = keyringFor('receiver', readKeys(TEST_KEYS_DIR));
    const now = () => Date.now() + later();
    return new OperatorActions({
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
      trust: { sealer: sealerOf(ring, now)!, ring, allowUnsigned: false, now, onUntrusted: (u) => refused.push(u) },
      now: () => new Date(now()),
    }).store;
  };
  beforeAll(() => {
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it('does not seal again a copy put back from before a newer decision: not on the replica that wrote the decision, nor on one that never saw it', async () => {
    let later = 0;
    const refusedByWriter: UntrustedControl[] = [];
    const writer = replica(() => later, refusedByWriter);
    await writer.setMode({ runbook: RUNBOOK }, 'enforce', { by: 'alice' });
    const copied = await redis.hget(keys.modes, field);
    await writer.setMode({ runbook: RUNBOOK }, 'dry-run', { by: 'alice' });
    await redis.hset(keys.modes, field, copied!);
    // 11 minutes on the copy's seal is due for a new one: sealed again, the replay would stand
    // for good for every reader that never saw the dry-run; left alone it lapses 4 minutes later.
    later = 11 * 60_000;
    expect(await writer.resealStanding()).toBe(0);
    expect(refusedByWriter).toContainEqual(expect.objectContaining({ kind: 'mode', field, reason: 'replayed' }));
    const refusedByNew: UntrustedControl[] = [];
    expect(await replica(() => later, refusedByNew).resealStanding()).toBe(0);
    expect(refusedByNew).toContainEqual(
      expect.objectContaining({ kind: 'mode', field, reason: 'replayed', detail: expect.stringMatching(/older than the field's last written generation/) }),
    );
    expect(await redis.hget(keys.modes, field)).toBe(copied);

    // A standing record is still sealed again, keeping its generation.
    later = 0;
    await writer.setMode({ runbook: RUNBOOK }, 'enforce', { by: 'alice' });
    const standing = JSON.parse((await redis.hget(keys.modes, field))!);
    later = 11 * 60_000;
    expect(await replica(() => later).resealStanding()).toBe(1);
    const after = JSON.parse((await redis.hget(keys.modes, field))!);
    expect(after.gen).toBe(standing.gen);
    expect(after.seal.exp).toBeGreaterThan(standing.seal.exp);
  });
});
