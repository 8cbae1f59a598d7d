import { mkdtempSync, rmSync } from 'node:fs';
import { nothingToDo } from '../support/stub-result.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../src/core/catalogue/jobs.ts';
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { parseConfig } from '../../src/core/config/load.ts';
import { createLogger } from '../../src/adapters/observability/logger.ts';
import { runRunbook } from '../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../../workers/engine/runbook.ts';
import { expectOk } from '../../workers/host/command-failed.ts';
import { createRealHost } from '../../workers/host/real-host.ts';
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import { waitFor } from '../support/alertmanager.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';
import { sealJob } from '../../src/core/trust/work.ts';
import { TEST_KEYS_DIR, testSealer } from '../support/trust.ts';
import type { RemediationJob } from '../../src/core/catalogue/jobs.ts';

const sealed = (j: RemediationJob) => sealJob(testSealer('receiver'), nodeQueueName(NODE), j, 86_400_000);

// Host commands that hang (one ignoring SIGTERM, like a read stuck on a dead multipath map):
// each ends at its deadline, the job fails visibly, and the node's next job starts right after,
// not after some longer lock or stall timeout. Real processes through the real host and agent.

const NODE = 'fault-hung-node';
const DEADLINE_MS = 800;
const GRACE_MS = 300;

describe('hung host commands', () => {
  const prefix = uniquePrefix('fault-hung');
  let redis: Redis;
  let queue: Queue;
  const started = new Map<string, number>();
  const root = mkdtempSync(join(tmpdir(), 'vm-fault-hung-'));
  const records: CommandRecord[] = [];

  const host = createRealHost({ timeoutMs: DEADLINE_MS, killGraceMs: GRACE_MS });
  const def: RunbookDefinition<'residual-multipath-cleanup', { probe: CommandRecord }, PlannedStep> = {
    runbook: 'residual-multipath-cleanup',
    // Observe: a probe that hangs and ignores SIGTERM; observe records it and goes on.
    observe: async () => {
      const probe = await host.run(['sh', '-c', 'trap "" TERM; sleep 300'], { timeoutMs: DEADLINE_MS });
      records.push(probe);
      return { probe };
    },
    plan: () => ({
      kind: 'steps',
      summary: 'one step that hangs',
      steps: [
        {
          id: 'hang',
          description: 'a command that hangs',
          destructive: true,
          evidence: [{ claim: 'the toy device is ours', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
        },
      ],
    }),
    steps: {
      isDone: async () => false,
      apply: async () => {
        const r = await host.run(['sleep', '300']);
        records.push(r);
        expectOk(r);
      },
    },
    verify: async () => ({ ok: true, checks: [] }),
  };

  beforeAll(() => {
    redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    queue = new Queue(nodeQueueName(NODE), { connection: redis, prefix });
  });
  afterAll(async () => {
    await queue?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
    rmSync(root, { recursive: true, force: true });
  });

  it("ends every hung command at its deadline and starts the node's next job right after", async () => {
    const config = parseConfig('node-agent', {
      redisUrl: redisUrl(),
      queuePrefix: prefix,
      nodeName: NODE,
      signingKeysDir: TEST_KEYS_DIR,
      defaultMode: 'enforce',
      logLevel: 'silent',
    });
    const agent = createNodeAgent({
      config,
      log: createLogger('hung', 'silent'),
      registry: {
        'residual-multipath-cleanup': async (job, ctx) => {
          started.set(job.key, Date.now());
          if (job.key.startsWith('residual_hung')) return runRunbook(def, job, ctx, { host: createRealHost({ root }), stateDir: '/state' });
          return nothingToDo(job.runbook, ctx, 'next job');
        },
      },
    });
    try {
      const job = (key: string): ResidualMultipathJob => ({
        runbook: 'residual-multipath-cleanup',
        version: 1,
        key,
        target: { node: NODE },
        evidence: [{ source: 'api', summary: 'fault test', raw: null }],
      });
      await queue.add('residual-multipath-cleanup', sealed(job('residual_hung_000000000001')), {
        jobId: 'residual_hung_000000000001',
        attempts: 1,
      });
      await queue.add('residual-multipath-cleanup', sealed(job('residual_next_000000000002')), {
        jobId: 'residual_next_000000000002',
        attempts: 1,
      });
      await waitFor('the next job to start', async () => started.has('residual_next_000000000002'), 20_000);

      const hung = await queue.getJob('residual_hung_000000000001');
      expect(await hung!.getState()).toBe('failed');
      expect(hung!.failedReason).toMatch(/step hang failed/);
      // Both hung commands ended at their deadline (+ the kill grace for the one ignoring SIGTERM).
      expect(records).toHaveLength(2);
      for (const r of records) {
        expect(r.timedOut).toBe(true);
        expect(r.durationMs).toBeGreaterThanOrEqual(DEADLINE_MS);
        expect(r.durationMs).toBeLessThan(DEADLINE_MS + GRACE_MS + 1_000);
      }
      expect(records[0]!.signal).toBe('SIGKILL');
      const t0 = started.get('residual_hung_000000000001')!;
      const gap = started.get('residual_next_000000000002')! - (hung!.finishedOn ?? 0);
      const total = (hung!.finishedOn ?? 0) - t0;
      console.log(`hung job took ${total} ms (2 deadlines of ${DEADLINE_MS} ms + grace); next job started ${gap} ms after it failed`);
      expect(total).toBeLessThan(2 * (DEADLINE_MS + GRACE_MS) + 1_500);
      expect(gap).toBeLessThan(500);
    } finally {
      await agent.close();
    }
  });
});
