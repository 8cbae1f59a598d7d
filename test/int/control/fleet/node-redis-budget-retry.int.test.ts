import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApplyReport } from '../../../../src/adapters/redis/node-user-servers.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { NodeRedisBudget } from '../../../../src/control/fleet/node-redis-budget.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// A node over its Redis budget is recorded as restricted and its user applied again read-only.
// When a server did not take that (a timeout under a full Redis, a server away), the restriction
// stays recorded, so a later pass saw it as done and never applied it again: the node kept its
// write rules there (seen once in CI: "A may only read" failed). Now each pass applies it again
// until every server has it, over budget or not (the trim may already have brought it back).

describe('the per-node Redis budget makes a restricted node read-only until every server took it', () => {
  const prefix = uniquePrefix('budgetretry');
  const redis = new Redis(redisUrl());
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
  });

  it('applies the read-only user again at the next passes while a server reported a failure, then stops', async () => {
    const reports: ApplyReport[] = [
      { applied: [], failed: [{ server: '127.0.0.1:1', error: 'timed out' }] },
      { applied: [], failed: [{ server: '127.0.0.1:1', error: 'timed out' }] },
      { applied: ['127.0.0.1:1'], failed: [] },
    ];
    const asked: string[] = [];
    const budget = new NodeRedisBudget({
      redis,
      prefix,
      budgetBytes: 64 * 1024,
      users: {
        reapply: async (node) => {
          asked.push(node);
          return reports.shift() ?? { applied: ['127.0.0.1:1'], failed: [] };
        },
      },
      active: () => true,
      log: createLogger('test', 'silent'),
    });
    // 256 KiB in node x's own keys: over its 64 KiB budget.
    for (let i = 0; i < 4; i++) await redis.set(`${prefix}:${nodeQueueName('budget-x')}:flood:${i}`, 'x'.repeat(64 * 1024));
    await budget.pass('periodic');
    expect(asked).toEqual(['budget-x']);
    // Trimmed under its budget now, but the last apply failed somewhere: applied again.
    await budget.pass('periodic');
    expect(asked).toEqual(['budget-x', 'budget-x']);
    await budget.pass('periodic');
    expect(asked).toEqual(['budget-x', 'budget-x', 'budget-x']);
    // Every server took it: nothing more.
    await budget.pass('periodic');
    expect(asked).toHaveLength(3);
  });
});
