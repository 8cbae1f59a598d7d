import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs } from '../../../testkit/jobs.ts';
import { getJson, post } from '../../../testkit/payloads.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';

// POST /v1/placeholders/release against a real receiver and Redis: an operator's release must
// say force and why; who asks is the operator's Kubernetes identity (the fake API server's
// TokenReview), never the body; it is stored as an operator's forced release and audited.

const WEBHOOK_TOKEN = 'placeholder-release-token-0123456789';
const body = { node: 'worker-1', pv: 'local-pv-3f2a', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', why: 'disk replaced, PVC recreated' };

describe('an operator releases a placeholder', () => {
  const prefix = uniquePrefix('lpvrelease');
  let receiver: Receiver;
  let ops: Operators;
  let TOKEN: string;
  beforeAll(async () => {
    ops = await startOperators();
    TOKEN = ops.token('alice');
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [WEBHOOK_TOKEN] }), {
      operatorKubeConfig: ops.api.kubeConfig(),
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
  });

  it('refuses a release without force, saying why force is needed', async () => {
    const r = await post(`${receiver.url}/v1/placeholders/release`, body, TOKEN);
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/force: true.*without checking that the disk is back/);
    expect((await getJson(`${receiver.url}/v1/jobs?runbook=local-pv-placeholder`, TOKEN)).jobs).toEqual([]);
  });

  it('refuses one with no reason, one without an operator, and the webhook token', async () => {
    expect((await post(`${receiver.url}/v1/placeholders/release`, { ...body, force: true, why: ' ' }, TOKEN)).status).toBe(400);
    expect((await post(`${receiver.url}/v1/placeholders/release`, { ...body, force: true })).status).toBe(401);
    expect((await post(`${receiver.url}/v1/placeholders/release`, { ...body, force: true }, WEBHOOK_TOKEN)).status).toBe(403);
  });

  it("stores a forced operator release for the node, and audits who asked (the token's user, not the body's `by`) and why", async () => {
    const r = await post(`${receiver.url}/v1/placeholders/release`, { ...body, force: true, by: 'mallory' }, TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.recordedAs).toBe('alice');
    expect(r.json.accepted).toMatchObject({
      runbook: 'local-pv-placeholder',
      node: 'worker-1',
      queue: 'vm-node-{worker-1}',
      deduplicated: false,
    });
    const redis = new Redis(redisUrl());
    const jobs = testJobs(redis, prefix);
    const stored = await jobs.get('vm-node-{worker-1}', r.json.accepted.id).finally(async () => {
      await jobs.close();
      redis.disconnect();
    });
    expect(stored?.data).toMatchObject({
      action: 'release',
      release: { by: 'operator', force: true },
      target: { node: 'worker-1', pv: 'local-pv-3f2a', path: body.path },
    });
    const job = await getJson(`${receiver.url}/v1/jobs/${r.json.accepted.id}`, TOKEN);
    expect(job.evidence[0]).toMatchObject({
      source: 'api',
      summary: 'release of the placeholder of PV local-pv-3f2a forced by alice: disk replaced, PVC recreated',
    });
    const { audit } = await getJson(`${receiver.url}/v1/controls/audit`, TOKEN);
    expect(audit).toContainEqual(
      expect.objectContaining({
        action: 'placeholder-release-forced',
        by: 'alice',
        why: 'disk replaced, PVC recreated',
        target: `pv/local-pv-3f2a job/${r.json.accepted.id}`,
      }),
    );
    // The same request again folds into the same job.
    const again = await post(`${receiver.url}/v1/placeholders/release`, { ...body, force: true }, TOKEN);
    expect(again.json.accepted).toMatchObject({ id: r.json.accepted.id, deduplicated: true });
  });
});
