import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { statsKey } from '../../../../src/adapters/stats/job-stats.ts';
import { JobEventRecorder } from '../../../../src/adapters/kube/job-events.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { NoAgentWatch } from '../../../../workers/cluster-worker/no-agent-watch.ts';
import { presenceKey } from '../../../../src/adapters/jobstore/agent-presence.ts';
import { failStranded } from '../../../../src/adapters/jobstore/fail-stranded.ts';
import { workerConnection } from '../../../../src/adapters/redis/redis.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { testConfig } from '../../../support/config.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { waitFor } from '../../../support/wait.ts';

// Issue 22: a job for a node without an agent raises a metric, a warning log and a Kubernetes
// Event, and fails after NO_AGENT_DEADLINE_SECONDS with a reason. Real Redis, the real receiver
// (jobs and /metrics), a real node agent for the "agent present" case, and the fake API server
// for the Events. The check's clock is moved forward (grace 60 s, deadline 300 s) instead of
// sleeping through them.

const EVENTS = '/apis/events.k8s.io/v1/namespaces/default/events';
const TOKEN = 'no-agent-test-token-0123456789';
const GRACE = 60_000;
const DEADLINE = 300_000;

interface PostedEvent {
  reason: string;
  type: string;
  note: string;
  regarding: { kind: string; name: string };
}

describe('jobs on a node queue that no node agent serves', () => {
  const prefix = uniquePrefix('noagent');
  let api: FakeKubeApi;
  let receiver: Receiver;
  let redis: Redis;
  let jobs: TestJobs;
  let watch: NoAgentWatch;
  let offset = 0;
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        cb();
      },
    }),
  );
  const events = (node: string): PostedEvent[] =>
    api
      .requestsTo('POST', EVENTS)
      .map((r) => r.body as PostedEvent)
      .filter((e) => e.regarding.name === node);
  const postAlert = async (node: string, fingerprint: string): Promise<string> => {
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved', fingerprint)]), TOKEN);
    expect(r.status).toBe(202);
    return r.json.accepted[0].id as string;
  };
  const metric = async (): Promise<string | undefined> => {
    const text = await (await fetch(`${receiver.url}/metrics`)).text();
    return /^volume_medic_jobs_without_agent (\d+)$/m.exec(text)?.[1];
  };

  beforeAll(async () => {
    api = await startFakeKubeApi();
    redis = new Redis(redisUrl());
    jobs = testJobs(redis, prefix);
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN] }));
    watch = new NoAgentWatch({
      redis,
      prefix,
      graceMs: GRACE,
      deadlineMs: DEADLINE,
      intervalMs: 60_000,
      log,
      events: new JobEventRecorder({
        events: restApis(new KubeRest({ server: api.url, token: () => 'fake-token' })).events,
        instance: 'cluster-worker',
      }),
      workerConnection: () => workerConnection(redisUrl()),
      now: () => Date.now() + offset,
    });
  });
  afterAll(async () => {
    await watch?.close();
    await receiver?.close();
    await api?.close();
    await jobs?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it("says nothing while the node's agent is there, even with a job waiting behind a busy one", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let started = 0;
    const agent = createNodeAgent({
      // The agent checks in every LOCK_DURATION_MS (BullMQ's stalled check).
      config: testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, nodeName: 'busy-1', lockDurationMs: 5_000 }),
      log: createLogger('agent', 'silent'),
      registry: {
        'residual-multipath-cleanup': async () => {
          started++;
          await gate;
          throw new Error('released');
        },
      },
    });
    try {
      await postAlert('busy-1', 'fpbusyone');
      await waitFor('the agent to take the first job', async () => (started > 0 ? true : undefined));
      const waiting = await postAlert('busy-1', 'fpbusytwo');
      // Well past the grace and the deadline, in steps shorter than the grace (as the check runs).
      for (offset = 0; offset <= DEADLINE + GRACE; offset += GRACE / 2) {
        const r = await watch.check();
        expect(r.stranded.has(nodeQueueName('busy-1'))).toBe(false);
        expect(r.failed).toEqual([]);
      }
      expect(await jobs.state(nodeQueueName('busy-1'), waiting)).toBe('waiting');
      expect(events('busy-1')).toEqual([]);
      expect(lines.filter((l) => l['node'] === 'busy-1')).toEqual([]);
      expect(await metric()).toBe('0');
    } finally {
      offset = 0;
      release();
      await agent.close();
    }
  });

  it('raises the metric, a warning and a NoAgent Event after the grace, and fails the job with a reason after the deadline', async () => {
    const id = await postAlert('lost-1', 'fplostone');
    const queue = nodeQueueName('lost-1');
    offset = 0;
    expect((await watch.check()).stranded.has(queue)).toBe(false);

    offset = GRACE + 1_000;
    const found = await watch.check();
    expect(found.stranded.get(queue)?.map((j) => j.id)).toEqual([id]);
    expect(found.failed).toEqual([]);
    expect(await metric()).toBe('1');
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        node: 'lost-1',
        jobId: id,
        runbook: 'residual-multipath-cleanup',
        msg: 'job waits on a node queue that no node agent serves',
      }),
    );
    const noAgent = await waitFor('the NoAgent Event', async () => events('lost-1').find((e) => e.reason === 'NoAgent'));
    expect(noAgent).toMatchObject({ type: 'Warning', regarding: { kind: 'Node', name: 'lost-1' } });
    expect(noAgent.note).toContain(`job ${id}`);
    expect(noAgent.note).toContain('NO_AGENT_DEADLINE_SECONDS');
    // Reported once, not at every check.
    await watch.check();
    expect(events('lost-1').filter((e) => e.reason === 'NoAgent')).toHaveLength(1);

    offset = DEADLINE + 1_000;
    const late = await watch.check();
    expect(late.failed).toEqual([id]);
    const job = (await jobs.get(queue, id))!;
    expect(await jobs.state(queue, id)).toBe('failed');
    expect(job.failedReason).toMatch(
      /^no node agent: no node agent has checked in on queue vm-node-\{lost-1\}.*NO_AGENT_DEADLINE_SECONDS \(300 s\).*node lost-1$/,
    );
    // Failed for good: no retry although the runbook allows 4 attempts.
    expect(job.attemptsMade).toBe(1);
    expect(await metric()).toBe('0');
    expect(await redis.hget(statsKey(prefix), 'finished|residual-multipath-cleanup|no-agent')).toBe('1');
    expect(lines).toContainEqual(
      expect.objectContaining({ node: 'lost-1', jobId: id, msg: 'failed a job no node agent took before NO_AGENT_DEADLINE_SECONDS' }),
    );
    await waitFor('the RemediationFailed Event', async () =>
      events('lost-1').find((e) => e.reason === 'RemediationFailed' && e.note.includes('no node agent')),
    );
    // The failing pass took the job as a worker does, but never passed for an agent.
    expect(await redis.exists(`${prefix}:${queue}:stalled-check`, presenceKey(prefix, queue))).toBe(0);
    offset = 0;
  });

  it('never fails a job once an agent checks in on its queue, however long it waited', async () => {
    const id = await postAlert('late-1', 'fplateone');
    const queue = nodeQueueName('late-1');
    offset = GRACE + 1_000;
    expect((await watch.check()).stranded.get(queue)?.map((j) => j.id)).toEqual([id]);
    // An agent starts (its first renewal writes the presence key) just before the deadline check.
    await redis.set(presenceKey(prefix, queue), String(Date.now()), 'PX', 60_000);
    offset = DEADLINE + 1_000;
    const r = await watch.check();
    expect(r.failed).toEqual([]);
    expect(r.stranded.has(queue)).toBe(false);
    expect(await jobs.state(queue, id)).toBe('waiting');
    offset = 0;
  });

  it('fails nothing when an agent checks in between the check and the failing, and gives back a job it was not asked to fail', async () => {
    const queue = nodeQueueName('race-1');
    const id = await postAlert('race-1', 'fpraceone');
    const connection = workerConnection(redisUrl());
    try {
      expect(
        await failStranded({
          connection,
          prefix,
          queue,
          ids: new Set([id]),
          reason: 'test',
          keepFailed: { age: 900 },
          stillAbsent: async () => false,
        }),
      ).toEqual([]);
      expect(await jobs.state(queue, id)).toBe('waiting');
      expect(
        await failStranded({
          connection,
          prefix,
          queue,
          ids: new Set(['some-other-job']),
          reason: 'test',
          keepFailed: { age: 900 },
          stillAbsent: async () => true,
        }),
      ).toEqual([]);
      expect(await jobs.state(queue, id)).toBe('waiting');
      expect((await jobs.get(queue, id))!.attemptsMade).toBe(0);
    } finally {
      connection.disconnect();
    }
  });
});
