import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { EnrolAnswer, EnrolRequest } from '../../../../src/core/trust/enrolment-wire.ts';
import { enrolFromConfig } from '../../../../workers/agent-bootstrap/enrol.ts';
import { testConfig } from '../../../support/config.ts';

// Both agents enrol through the bootstrap: each asks for its own queue's keys, and only a node
// agent runs as the Redis user enrolment hands out (the cluster worker keeps configuration's).

const log = pino({ level: 'silent' });
const KEY = Buffer.alloc(32, 7).toString('base64');

function receiver(redis?: EnrolAnswer['redis']): { asked: EnrolRequest[]; enrol: (t: unknown, r: EnrolRequest) => Promise<EnrolAnswer> } {
  const asked: EnrolRequest[] = [];
  return {
    asked,
    enrol: async (_t, r) => {
      asked.push(r);
      return { queue: 'q', keys: { 'receiver.k1': KEY }, renewAfterSeconds: 3_600, ...(redis ? { redis } : {}) };
    },
  };
}

describe('enrolment from configuration', () => {
  const user = { username: 'node-a', password: 'a-password-of-16+' };
  const enrolling = testConfig({
    enrolUrl: 'https://receiver.invalid',
    enrolTokenFile: '/dev/null',
    redisUsername: 'configured',
    redisPassword: 'configured-password',
  });

  it('without ENROL_URL: the configuration as it is, nothing enrolled', async () => {
    const config = testConfig({});
    expect(await enrolFromConfig(config, { as: 'cluster-worker' }, log)).toEqual({ config });
  });

  it("a node agent asks for its node's keys and runs as the Redis user it is handed", async () => {
    const r = receiver(user);
    const { config, enrolled } = await enrolFromConfig(enrolling, { as: 'node-agent', node: 'node-a' }, log, r.enrol);
    expect(r.asked).toEqual([{ as: 'node-agent', node: 'node-a' }]);
    expect([config.redisUsername, config.redisPassword]).toEqual([user.username, user.password]);
    expect(enrolled?.redis()).toEqual(user);
    enrolled?.close();
  });

  it('the cluster worker asks for its own keys and keeps the configured Redis user', async () => {
    const r = receiver(user);
    const { config, enrolled } = await enrolFromConfig(enrolling, { as: 'cluster-worker' }, log, r.enrol);
    expect(r.asked).toEqual([{ as: 'cluster-worker' }]);
    expect([config.redisUsername, config.redisPassword]).toEqual(['configured', 'configured-password']);
    expect(enrolled).toBeDefined();
    enrolled?.close();
  });
});
