import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaintSightings } from '../../../../src/adapters/controls/taint-sightings.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';

// The out-of-service taint's first sight in Redis: the first writer wins, the record is sealed
// with the receiver's key and parsed and verified when read back, so a record written straight
// into Redis (or altered) counts as none; the record goes with the taint.

let redis: Redis;
const prefix = uniquePrefix('oos');
const ring = keyringFor('receiver', readKeys(TEST_KEYS_DIR));
const store = () => new TaintSightings(redis, prefix, { sealer: testSealer('receiver'), ring, allowUnsigned: false });
const seen = (boot: string, at = '2026-12-07T08:00:05.000Z') => ({
  node: 'worker-2',
  timeAdded: '2026-12-07T08:00:00.000Z',
  bootIdAtFirstSight: boot,
  firstSeenAt: at,
});

beforeAll(() => {
  redis = new Redis(redisUrl());
});
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

describe('TaintSightings', () => {
  it('keeps the first sight of a taint: a later one (another replica, a later update) gets the first back', async () => {
    expect(await store().firstSight(seen('boot-old'))).toEqual(seen('boot-old'));
    expect(await store().firstSight(seen('boot-new', '2026-12-07T08:20:00.000Z'))).toEqual(seen('boot-old'));
    expect(await store().get('worker-2')).toEqual(seen('boot-old'));
  });

  it('counts a record written straight into Redis or altered as none, and replaces it', async () => {
    const key = controlKeys(prefix).taintSightings;
    await redis.hset(key, 'worker-2', JSON.stringify({ record: seen('forged') }));
    expect(await store().get('worker-2')).toBeUndefined();
    const forged = JSON.parse((await redis.hget(key, 'worker-2')) ?? '{}');
    await store().firstSight(seen('boot-3'));
    const sealed = JSON.parse((await redis.hget(key, 'worker-2'))!);
    await redis.hset(key, 'worker-2', JSON.stringify({ ...sealed, record: { ...sealed.record, bootIdAtFirstSight: 'other' } }));
    expect(await store().get('worker-2')).toBeUndefined();
    expect(forged.record.bootIdAtFirstSight).toBe('forged');
    await redis.hset(key, 'worker-2', 'not json');
    expect(await store().get('worker-2')).toBeUndefined();
  });

  it('drops the record when the taint goes', async () => {
    await store().firstSight(seen('boot-9'));
    await store().drop('worker-2');
    expect(await store().get('worker-2')).toBeUndefined();
  });
});
