import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { startChild, type Child } from '../support/child.ts';
import { waitFor } from '../support/alertmanager.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';
import { EFFECTS_LOG, STEP_IDS } from './support/journal-runbook.ts';
import { sealJob } from '../../src/core/trust/work.ts';
import { TEST_KEYS_DIR, testSealer } from '../support/trust.ts';

// SIGKILL of the node agent in the middle of a runbook with four destructive steps: after two
// took effect and the third is under way. The job stalls, another agent takes it, resumes from
// the journal on the host, and finishes; the host's effects log shows every step exactly once.

const NODE = 'fault-journal-node';

describe('node agent killed in the middle of a runbook', () => {
  const prefix = uniquePrefix('fault-journal');
  let redis: Redis;
  let queue: Queue;
  let root: string;
  const agents: Child[] = [];
  const agent = (env: Record<string, string>) => {
    const a = startChild(new URL('./support/journal-agent.ts', import.meta.url).pathname, {
      REDIS_URL: redisUrl(),
      QUEUE_PREFIX: prefix,
      NODE_NAME: NODE,
      HOST_ROOT: root,
      SIGNING_KEYS_DIR: TEST_KEYS_DIR,
      ...env,
    });
    agents.push(a);
    return a;
  };

  beforeAll(() => {
    redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    queue = new Queue(nodeQueueName(NODE), { connection: redis, prefix });
    root = mkdtempSync(join(tmpdir(), 'vm-fault-host-'));
    mkdirSync(join(root, 'var/log'), { recursive: true });
  });
  afterAll(async () => {
    await Promise.allSettled(agents.map((a) => a.kill('SIGKILL')));
    await queue?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
    rmSync(root, { recursive: true, force: true });
  });

  it('resumes from its journal and runs no step that took effect twice', async () => {
    const key = 'residual_fault-journal-node_boot_0123456789ab';
    const data: ResidualMultipathJob = {
      runbook: 'residual-multipath-cleanup',
      version: 1,
      key,
      target: { node: NODE },
      evidence: [{ source: 'api', summary: 'fault test', raw: null }],
    };
    await queue.add(data.runbook, sealJob(testSealer('receiver'), nodeQueueName(NODE), data, 86_400_000), {
      jobId: key,
      attempts: 4,
      backoff: { type: 'fixed', delay: 100 },
    });

    const first = agent({ PAUSE_BEFORE: 'detach:c' });
    await first.waitLine('PAUSED detach:c');
    expect(readFileSync(join(root, EFFECTS_LOG), 'utf8').split('\n').filter(Boolean)).toEqual(['detach:a', 'detach:b']);
    await first.kill('SIGKILL');

    agent({});
    const job = await waitFor(
      'the job to complete on the second agent',
      async () => {
        const j = await queue.getJob(key);
        return (await j?.getState()) === 'completed' ? j : undefined;
      },
      30_000,
    );

    const effects = readFileSync(join(root, EFFECTS_LOG), 'utf8').split('\n').filter(Boolean);
    expect(effects).toEqual([...STEP_IDS]);
    const steps = (job!.returnvalue as { steps: { id: string; status: string }[] }).steps;
    expect(steps.map((s) => [s.id, s.status])).toEqual([
      ['detach:a', 'skipped-already-done'],
      ['detach:b', 'skipped-already-done'],
      ['detach:c', 'done'],
      ['detach:d', 'done'],
    ]);
    expect(job!.attemptsStarted).toBeGreaterThanOrEqual(2);
    const journal = JSON.parse(readFileSync(join(root, 'var/lib/volume-medic/journal', `${key}.json`), 'utf8'));
    expect(journal).toMatchObject({ finished: true, done: STEP_IDS.map((id) => ({ id })) });
  });
});
