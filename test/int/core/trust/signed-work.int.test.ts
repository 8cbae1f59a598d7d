import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { finishedExposition } from '../../../../src/adapters/stats/job-stats.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { ControlsStore } from '../../../../src/adapters/controls/controls-store.ts';
import { keyringFor } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealJob } from '../../../../src/core/trust/work.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { rawQueue, type RawQueue } from '../../../support/raw-jobs.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// Issue 20, "signed work": with write access to Redis alone one must not be able to make an agent
// act. Jobs are written straight into the node's queue with BullMQ's own add (what anyone holding
// the Redis password can do) and a real agent process (test/support/stub-agent.ts: the real
// createNodeAgent with runbooks that print RAN when they run) must refuse every forgery without
// running it, with the refusal in the job, the audit trail and the metrics; a correctly sealed
// job runs. Each case fails if the check it names is removed from the agent.

const NODE = 'sealed-node';
const DAY = 86_400_000;

const residual = (key: string): RemediationJob => ({
  version: 1,
  key,
  runbook: 'residual-multipath-cleanup',
  target: { node: NODE },
  evidence: [{ source: 'alertmanager', summary: 'KubeNodeNotReady resolved', raw: { n: 1 } }],
});
const unmap = (key: string): RemediationJob => ({
  version: 1,
  key,
  runbook: 'rbd-unmap',
  target: { node: NODE, pool: 'rbd', image: 'img', watcher: '10.0.0.9:0/123' },
  evidence: [{ source: 'api', summary: 'handed over', raw: null }],
});

describe('an agent acts only on sealed work (a real agent process, jobs written straight into Redis)', () => {
  const prefix = uniquePrefix('sealed');
  const queueName = nodeQueueName(NODE);
  let redis: Redis;
  let queue: RawQueue;
  let jobs: TestJobs;
  let agent: ChildProcess;
  let out = '';

  const startAgent = async (): Promise<void> => {
    agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: { ...process.env, REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, NODE_NAME: NODE, STATE_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    agent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor('the agent to start', async () => (out.includes('READY') ? true : undefined));
  };
  const stateDir = mkdtempSync(join(tmpdir(), 'vm-sealed-state-'));

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    queue = rawQueue(redis, prefix, queueName);
    jobs = testJobs(redis, prefix);
    // The node's queue is in the registry (the receiver records it when it enrols the agent or
    // puts a job on it): the audit trail's readers merge every registered queue's entries.
    await redis.sadd(knownQueuesKey(prefix), queueName);
    await startAgent();
  });
  afterAll(async () => {
    agent?.kill('SIGKILL');
    await queue?.close();
    await jobs?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  const settled = (id: string) =>
    waitFor(
      `job ${id} to finish`,
      async () => {
        const j = await jobs.get(queue.name, id);
        return j && (j.finishedOn ?? 0) > 0 ? j : undefined;
      },
      15_000,
    );

  const expectRefused = async (id: string, data: unknown, reason: RegExp): Promise<void> => {
    await queue.add('residual-multipath-cleanup', data, { jobId: id, attempts: 3 });
    const j = await settled(id);
    expect(j.failedReason).toMatch(/untrusted work refused/);
    expect(j.failedReason).toMatch(reason);
    // Refused at once: no retry of forged work, and the runbook never started.
    expect(j.attemptsMade).toBe(1);
    expect(out).not.toContain(` ${id} `);
    const audit = await new ControlsStore(redis, prefix).auditLog(200);
    expect(audit.find((e) => e.action === 'work-refused' && e.target === `job/${id}`)?.by).toBe(NODE);
  };

  it('runs a job sealed by the receiver for this queue', async () => {
    const id = 'valid-1';
    await queue.add('residual-multipath-cleanup', sealJob(testSealer('receiver'), queueName, residual(id), DAY), { jobId: id });
    const j = await settled(id);
    expect(j.returnvalue).toMatchObject({ outcome: 'nothing-to-do' });
    expect(out).toContain(`RAN residual-multipath-cleanup ${id} dry-run`);
  });

  it('refuses an unsigned job', async () => {
    await expectRefused('unsigned-1', residual('unsigned-1'), /\(unsigned\)/);
  });

  it('refuses a job sealed with a key it does not hold under a key id it knows', async () => {
    const forger = sealerOf(keyringFor('receiver', new Map([['receiver.test', randomBytes(32)]])))!;
    await expectRefused('forged-1', sealJob(forger, queueName, residual('forged-1'), DAY), /\(bad-mac\)/);
  });

  it('refuses a sealed job whose content was changed, or moved to another id', async () => {
    const sealed = sealJob(testSealer('receiver'), queueName, residual('moved-0'), DAY);
    await expectRefused('moved-1', { ...sealed, key: 'moved-1' }, /\(bad-mac\)/);
    await expectRefused('moved-2', sealed, /\(bad-mac\)/);
  });

  it('refuses an expired job', async () => {
    const past = sealerOf(keyringFor('receiver', new Map([['receiver.test', keyOf('receiver')]])), () => Date.now() - 2 * DAY)!;
    await expectRefused('expired-1', sealJob(past, queueName, residual('expired-1'), DAY), /\(expired\)/);
  });

  it('refuses an rbd-unmap sealed by the receiver: only the cluster worker issues those', async () => {
    await expectRefused('unmap-1', sealJob(testSealer('receiver'), queueName, unmap('unmap-1'), DAY), /\(wrong-issuer\).*cluster worker/);
    // The same job sealed by the cluster worker runs.
    await queue.add('rbd-unmap', sealJob(testSealer('cluster-worker'), queueName, unmap('unmap-2'), DAY), { jobId: 'unmap-2' });
    await settled('unmap-2');
    expect(out).toContain('RAN rbd-unmap unmap-2');
  });

  it('refuses a finished sealed job put back on the queue (a replay), across an agent restart', async () => {
    const id = 'replay-1';
    const sealed = sealJob(testSealer('receiver'), queueName, residual(id), DAY);
    await queue.add('residual-multipath-cleanup', sealed, { jobId: id });
    await settled(id);
    expect(out.match(new RegExp(`RAN residual-multipath-cleanup ${id} `, 'g'))?.length).toBe(1);
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    out = '';
    await startAgent();
    await queue.remove(id);
    await expectRefused(id, sealed, /\(replayed\)/);
  });

  it('counts every refusal by reason in the fleet metrics', async () => {
    const text = await finishedExposition(redis, prefix);
    for (const reason of ['unsigned', 'bad-mac', 'expired', 'wrong-issuer', 'replayed']) {
      expect(text).toMatch(new RegExp(`volume_medic_untrusted_refused_total\\{kind="job",reason="${reason}"\\} [1-9]`));
    }
  });
});

const keyOf = (role: string): Buffer => Buffer.from(readFileSync(join(TEST_KEYS_DIR, `${role}.test`), 'utf8').trim(), 'base64');
