import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { sealJob, verifyJobSeal } from '../../../../src/core/trust/work.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { PermanentError } from '../../../../src/core/errors.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls } from '../../../support/controls-harness.ts';
import { startOperators, VIEWERS, type Operators } from '../../../testkit/operators.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { rawQueue, type RawQueue } from '../../../support/raw-jobs.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// Issue 23, "retry a failed job", end to end with a real receiver, a real node agent (seals
// verified, replays refused, the host journal) and real Redis. A retry is a NEW job the receiver
// seals afresh, never the old sealed data put back: the agent would refuse that as a replay, and
// a retry must not launder data nobody issued. The retry's steps that an earlier job of its line
// already took are skipped through the journal, even where their own check says "not done".

const NODE = 'retry-node';
const TOKEN = 'retry-webhook-token-0123456789abcd';
const silent = createLogger('test', 'silent');

type Step = PlannedStep & { file: string };

/**
 * A toy residual-multipath-cleanup: `count` appends a line each time it runs and always says it
 * is not done (only the journal can stop a second run); `finish` fails while /w/broken exists.
 */
function toy() {
  const host = new FakeHost();
  const evidence = () => [{ claim: 'safe', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }];
  const def: RunbookDefinition<'residual-multipath-cleanup', null, Step> = {
    runbook: 'residual-multipath-cleanup',
    observe: async () => null,
    plan: () => ({
      kind: 'steps',
      summary: 'count, then finish',
      steps: [
        { id: 'count', description: 'append a line to /w/count', destructive: true, file: '/w/count', evidence: evidence() },
        { id: 'finish', description: 'write /w/finish', destructive: true, file: '/w/finish', evidence: evidence() },
      ],
    }),
    steps: {
      isDone: async (s, h) => (s.id === 'count' ? false : (await h.readFile(s.file)) !== null),
      apply: async (s, h) => {
        if (s.id === 'count') return h.writeFile(s.file, `${(await h.readFile(s.file)) ?? ''}ran\n`);
        if ((await h.readFile('/w/broken')) !== null) throw new PermanentError('the device is busy');
        return h.writeFile(s.file, 'done');
      },
    },
    verify: async () => ({ ok: true, checks: [] }),
  };
  return {
    host,
    registry: { 'residual-multipath-cleanup': (job: never, ctx: never) => runRunbook(def, job, ctx, { host, stateDir: '/state' }) },
  };
}

describe('retrying a failed job (receiver, real agent, real Redis)', () => {
  const prefix = uniquePrefix('retry');
  const queueName = nodeQueueName(NODE);
  const stateDir = mkdtempSync(join(tmpdir(), 'vm-retry-state-'));
  const runbook = toy();
  let receiver: Receiver;
  let agent: RunbookWorker;
  let ops: Operators;
  let redis: Redis;
  let queue: RawQueue;
  let jobs: TestJobs;
  let n = 0;

  const config = (over: Partial<Config> = {}) => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], ...fastControls, ...over });
  const alert = async (): Promise<string> => {
    n += 1;
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(NODE, 'resolved', `retry${n}`)]), TOKEN);
    return r.json.accepted[0].id;
  };
  const settled = (id: string) =>
    waitFor(
      `job ${id} to finish`,
      async () => {
        const j = await getJson(`${receiver.url}/v1/jobs/${id}`, ops.token('reader'));
        return j.state === 'completed' || j.state === 'failed' ? j : undefined;
      },
      15_000,
    );
  const retry = (id: string, body: unknown, who = 'oncall-rita', group?: string) => post(`${receiver.url}/v1/jobs/${id}/retry`, body, ops.token(who, group));

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    queue = rawQueue(redis, prefix, queueName);
    jobs = testJobs(redis, prefix);
    ops = await startOperators();
    receiver = await startReceiver(config(), { operatorKubeConfig: ops.api.kubeConfig(), log: silent });
    agent = createNodeAgent({
      config: config({ nodeName: NODE, stateDir, runbookModes: { 'residual-multipath-cleanup': 'enforce' } }),
      registry: runbook.registry as never,
      log: silent,
    });
  });
  afterAll(async () => {
    await agent?.close();
    await receiver?.close();
    await ops?.close();
    await queue?.close();
    await jobs?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
    rmSync(stateDir, { recursive: true, force: true });
  });

  let failedId = '';

  it('a failed job is retried as a new job sealed afresh: it runs, and the step its predecessor took is not taken again', async () => {
    await runbook.host.writeFile('/w/broken', 'yes');
    failedId = await alert();
    const failed = await settled(failedId);
    expect(failed.state).toBe('failed');
    expect(failed.failedReason).toMatch(/the device is busy/);
    expect(await runbook.host.readFile('/w/count')).toBe('ran\n');

    await runbook.host.unlink('/w/broken');
    const r = await retry(failedId, { why: 'the device was released by hand' });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      id: `${failedId}.r1`,
      queue: queueName,
      of: failedId,
      retry: { of: failedId, n: 1 },
      recordedAs: 'oncall-rita',
    });
    const done = await settled(r.json.id);
    expect(done.state).toBe('completed');
    expect(done.result.steps.map((s: { id: string; status: string }) => `${s.id} ${s.status}`)).toEqual(['count skipped-already-done', 'finish done']);
    // The journal, not the step's own check, kept `count` from running twice.
    expect(await runbook.host.readFile('/w/count')).toBe('ran\n');
    expect(await runbook.host.readFile('/w/finish')).toBe('done');
    // The failed job stays as it was; the new one says where it came from and who asked.
    expect((await getJson(`${receiver.url}/v1/jobs/${failedId}`, ops.token('reader'))).state).toBe('failed');
    expect(done.evidence.at(-1)).toMatchObject({
      source: 'api',
      summary: `retry of ${failedId} asked by oncall-rita: the device was released by hand`,
    });
    const audit: { action: string; by: string; target: string; why: string }[] = (await getJson(`${receiver.url}/v1/controls/audit`, ops.token('reader')))
      .audit;
    expect(
      audit
        .filter((e) => e.action === 'retry')
        .map((e) => `${e.by} ${e.target} ${e.why}`)
        .sort(),
    ).toEqual(
      [
        `oncall-rita job/${failedId} the device was released by hand (as ${failedId}.r1)`,
        `oncall-rita job/${failedId}.r1 retry of ${failedId}: the device was released by hand`,
      ].sort(),
    );
    // Sealed by the receiver for the new id on this queue.
    const stored = await jobs.get(queue.name, `${failedId}.r1`);
    const ring = keyringFor('node-agent', readKeys(TEST_KEYS_DIR));
    const v = verifyJobSeal(ring, queueName, `${failedId}.r1`, stored!.data, Date.now());
    expect(v.ok && v.seal.iss).toBe('receiver');
  });

  it('refuses a second retry of the same job, a job that has not failed, no reason, and an operator without the verb', async () => {
    const again = await retry(failedId, { why: 'once more' });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatch(new RegExp(`already retried as ${failedId}\\.r1 \\(completed\\)`));
    const notFailed = await retry(`${failedId}.r1`, { why: 'why not' });
    expect(notFailed.status).toBe(409);
    expect(notFailed.json.error).toMatch(/is completed: only a failed job can be retried/);
    expect((await retry(failedId, {})).status).toBe(400);
    const viewer = await retry(failedId, { why: 'let me' }, 'vic', VIEWERS);
    expect(viewer.status).toBe(403);
    expect(viewer.json.error).toMatch(/retry jobs\.volume-medic\.io/);
    expect((await retry('no-such-job', { why: 'x' })).status).toBe(404);
  });

  it("BullMQ's own retry of the old sealed job is refused by the agent as a replay: why a retry is a new job", async () => {
    await runbook.host.writeFile('/w/broken', 'yes');
    await runbook.host.unlink('/w/finish');
    const id = await alert();
    expect((await settled(id)).state).toBe('failed');
    await runbook.host.unlink('/w/broken');
    await queue.retry(id);
    const replay = await waitFor(
      'the replay refused',
      async () => {
        const j = await jobs.get(queue.name, id);
        return j?.finishedOn && j.failedReason?.includes('replayed') ? j : undefined;
      },
      15_000,
    );
    expect(replay.failedReason).toMatch(/untrusted work refused \(replayed\)/);
    expect(await runbook.host.readFile('/w/finish')).toBeNull();
    // The operator's retry of it is a new job, and runs.
    const r = await retry(id, { why: 'after the replay refusal' });
    expect(r.status).toBe(201);
    expect((await settled(r.json.id)).state).toBe('completed');
    expect(await runbook.host.readFile('/w/finish')).toBe('done');
  });

  it('never seals again what nobody issued: forged or unsigned data in the queue is not retried', async () => {
    const forged: RemediationJob = {
      version: 1,
      key: 'residual_forged_1',
      runbook: 'residual-multipath-cleanup',
      target: { node: NODE },
      evidence: [{ source: 'alertmanager', summary: 'forged', raw: null }],
    };
    // Sealed by the receiver's key for another job id (moved): the MAC no longer holds here.
    const moved = {
      ...sealJob(testSealer('receiver'), queueName, { ...forged, key: 'residual_other_1' }, 86_400_000),
      key: 'residual_forged_1',
    };
    await redis.sadd(knownQueuesKey(prefix), queueName);
    for (const [id, data] of [
      ['residual_forged_1', moved],
      ['residual_unsigned_1', { ...forged, key: 'residual_unsigned_1' }],
    ] as const) {
      await queue.add('residual-multipath-cleanup', data, { jobId: id, attempts: 1 });
      await waitFor(`${id} refused`, async () => ((await jobs.get(queue.name, id))?.finishedOn ? true : undefined), 15_000);
      const r = await retry(id, { why: 'looks legit' });
      expect(r.status).toBe(422);
      expect(r.json.error).toMatch(id === 'residual_unsigned_1' ? /carries no seal/ : /seal does not hold \(bad-mac/);
      expect(await jobs.state(queue.name, `${id}.r1`)).toBe('unknown');
    }
  });

  it("an rbd-unmap is the cluster worker's to issue: its retry names the job that asked for it", async () => {
    const unmap: RemediationJob = {
      version: 1,
      key: 'rbd-unmap_x_1',
      runbook: 'rbd-unmap',
      target: { node: NODE, pool: 'rbd', image: 'img', watcher: '10.0.0.9:0/123' },
      parent: 'rbd_parent_1',
      evidence: [{ source: 'api', summary: 'handed over', raw: null }],
    };
    await queue.add('rbd-unmap', sealJob(testSealer('cluster-worker'), queueName, unmap, 86_400_000), { jobId: unmap.key, attempts: 1 });
    // No rbd-unmap runbook in this agent: it fails as not implemented.
    await waitFor('rbd-unmap failed', async () => ((await jobs.get(queue.name, unmap.key))?.finishedOn ? true : undefined), 15_000);
    const r = await retry(unmap.key, { why: 'again' });
    expect(r.status).toBe(422);
    expect(r.json.error).toMatch(/rbd-unmap is issued by the cluster worker only.*retry the job that asked for it \(rbd_parent_1\)/);
  });

  // Issue 44, LOW: a retry is sealed as the receiver's work, so it must not launder what another
  // issuer sealed: node-a's agent holds its queue's key and can seal anything into its own queue.
  it("never makes a node agent's own sealed work the receiver's: neither work it may not issue nor its own check's", async () => {
    const agentSealer = testSealer('node-agent');
    const place: RemediationJob = {
      version: 1,
      key: 'lpv_by_agent_1',
      runbook: 'local-pv-placeholder',
      action: 'place',
      target: { node: NODE, pv: 'pv-local-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
      evidence: [{ source: 'agent', summary: 'sealed by the node itself', raw: null }],
    };
    const ownCheck: RemediationJob = {
      version: 1,
      key: 'residual_by_agent_1',
      runbook: 'residual-multipath-cleanup',
      target: { node: NODE },
      evidence: [{ source: 'agent', summary: 'an interrupted cleanup to finish', raw: null }],
    };
    await runbook.host.writeFile('/w/broken', 'yes');
    await runbook.host.unlink('/w/finish');
    await redis.sadd(knownQueuesKey(prefix), queueName);
    for (const job of [place, ownCheck]) {
      await queue.add(job.runbook, sealJob(agentSealer, queueName, job, 86_400_000), { jobId: job.key, attempts: 1 });
      await waitFor(`${job.key} failed`, async () => ((await jobs.get(queue.name, job.key))?.finishedOn ? true : undefined), 15_000);
    }
    // The agent itself refused the placement (a node agent does not issue it); its own check ran and failed.
    expect((await jobs.get(queue.name, place.key))?.failedReason).toMatch(/untrusted work refused \(wrong-issuer\)/);
    expect((await jobs.get(queue.name, ownCheck.key))?.failedReason).toMatch(/the device is busy/);
    const never = await retry(place.key, { why: 'looks legit' });
    expect(never.status).toBe(422);
    expect(never.json.error).toMatch(
      /sealed by the agent of node retry-node, which may not issue it \(a node agent issues only its own checks' work.*it was never valid work/,
    );
    const own = await retry(ownCheck.key, { why: 'again please' });
    expect(own.status).toBe(422);
    expect(own.json.error).toMatch(/the agent of node retry-node issued it \(its own check\), not the receiver/);
    for (const job of [place, ownCheck]) expect(await jobs.state(queue.name, `${job.key}.r1`)).toBe('unknown');
    await runbook.host.unlink('/w/broken');
  });
});
