import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import type { RunbookRegistry } from '../../../../workers/engine/registry.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { waitFor } from '../../../support/wait.ts';

const silent = createLogger('test', 'silent');

const okResult = (ranOn: string): RunbookResult => ({
  runbook: 'residual-multipath-cleanup',
  mode: 'dry-run',
  outcome: 'nothing-to-do',
  summary: 'no residual maps',
  facts: { maps: [] },
  plan: { steps: [] },
  refusals: [],
  steps: [],
  commands: [],
  ranOn,
});

describe('node agent with a real Redis', () => {
  const prefix = uniquePrefix('agent');
  let receiver: Receiver;
  let redis: Redis;

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, operatorAuth: 'insecure' }));
  });
  afterAll(async () => {
    await receiver?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  const agentFor = (node: string, registry: RunbookRegistry, lockDurationMs = 30_000) =>
    createNodeAgent({
      config: testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, nodeName: node, lockDurationMs }),
      registry,
      log: silent,
    });

  it("runs its node's job and the result, log and attempts show in GET /v1/jobs/:id", async () => {
    const r = await post(
      `${receiver.url}/v1/alertmanager`,
      alertmanagerBody([nodeNotReadyAlert('node-run', 'resolved'), nodeNotReadyAlert('node-other', 'resolved')]),
    );
    const id = r.json.accepted.find((a: { node: string }) => a.node === 'node-run').id;
    const agent = agentFor('node-run', { 'residual-multipath-cleanup': async (_job, ctx) => okResult(ctx.ranOn) });
    try {
      const job = await waitFor('job completed', async () => {
        const j = await getJson(`${receiver.url}/v1/jobs/${id}`);
        return j.state === 'completed' ? j : undefined;
      });
      expect(job.result).toMatchObject({ outcome: 'nothing-to-do', ranOn: 'node-run', mode: 'dry-run' });
      expect(job.attemptsMade).toBe(1);
      // One line for the attempt: where, in which mode and why, and how it ended (written with the statistics).
      expect(job.log).toEqual([expect.stringMatching(/^attempt 1 on node-run in dry-run mode \(.+\): nothing-to-do: /)]);
      // The other node's job is not this agent's to take.
      const other = new Queue(nodeQueueName('node-other'), { connection: redis, prefix });
      expect(await other.getJobCountByTypes('waiting')).toBe(1);
      await other.close();
      const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
      expect(metrics).toMatch(/volume_medic_jobs_finished_total\{runbook="residual-multipath-cleanup",outcome="nothing-to-do"\} 1/);
      expect(metrics).toMatch(/volume_medic_job_duration_seconds_count\{runbook="residual-multipath-cleanup"\} 1/);
    } finally {
      await agent.close();
    }
  });

  it('fails a job whose runbook it does not carry as "not implemented", without retrying', async () => {
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('node-empty', 'resolved')]));
    const id = r.json.accepted[0].id;
    const agent = agentFor('node-empty', {});
    try {
      const job = await waitFor('job failed', async () => {
        const j = await getJson(`${receiver.url}/v1/jobs/${id}`);
        return j.state === 'failed' ? j : undefined;
      });
      expect(job.failedReason).toMatch(/not implemented: runbook residual-multipath-cleanup/);
      expect(job.attemptsMade).toBe(1);
    } finally {
      await agent.close();
    }
  });

  it('takes a job again after its agent was killed in the middle of it', async () => {
    const node = 'node-stall';
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved')]));
    const id = r.json.accepted[0].id;
    const child = spawn(process.execPath, ['test/support/hanging-agent.ts'], {
      env: { ...process.env, REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, NODE_NAME: node, LOCK_DURATION_MS: '1000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor('the first agent to start the job', async () => (out.includes(`STARTED ${id}`) ? true : undefined));
    child.kill('SIGKILL');
    await once(child, 'exit');

    const events = new QueueEvents(nodeQueueName(node), { connection: { url: redisUrl() } as never, prefix });
    await events.waitUntilReady();
    const seen: string[] = [];
    events.on('stalled', ({ jobId }) => seen.push(jobId));
    const agent = agentFor(node, { 'residual-multipath-cleanup': async (_job, ctx) => okResult(ctx.ranOn) }, 1000);
    try {
      const job = await waitFor(
        'job completed by the second agent',
        async () => {
          const j = await getJson(`${receiver.url}/v1/jobs/${id}`);
          return j.state === 'completed' ? j : undefined;
        },
        30_000,
      );
      expect(job.result.ranOn).toBe(node);
      expect(job.attemptsStarted).toBeGreaterThanOrEqual(2);
      expect(seen).toContain(id);
    } finally {
      await agent.close();
      await events.close();
    }
  });

  it('refuses to start without NODE_NAME', async () => {
    const child = spawn(process.execPath, ['workers/node-agent/main.ts'], {
      env: { ...process.env, NODE_NAME: '', REDIS_URL: redisUrl() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(2);
    expect(out).toMatch(/NODE_NAME is required/);
  });
});
