import type { ControlsStore } from '../../adapters/controls/controls-store.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { NodeRedisUsers } from '../../adapters/redis/node-redis-users.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import { NodeRedisBudget } from './node-redis-budget.ts';

/**
 * The per-node Redis memory budget, when it can be enforced: a budget (NODE_REDIS_BUDGET_MIB > 0)
 * and per-node Redis users (REDIS_NODE_USERS) to take writes from. With the shared node-agent
 * user any agent may write any node's keys, so a node's keys say nothing of who wrote them.
 */
export function startNodeRedisBudget(
  config: Pick<ReceiverConfig, 'queuePrefix' | 'nodeRedisBudgetMib' | 'nodeRedisBudgetScanSeconds'>,
  log: Logger,
  redis: RedisConnection,
  users: NodeRedisUsers | undefined,
  active: () => boolean,
  audit: Pick<ControlsStore, 'audit'>,
): NodeRedisBudget | undefined {
  if (config.nodeRedisBudgetMib <= 0) return undefined;
  if (!users) {
    log.info('NODE_REDIS_BUDGET_MIB needs REDIS_NODE_USERS (a Redis user per node to take writes from): no per-node memory budget');
    return undefined;
  }
  const budget = new NodeRedisBudget({
    redis,
    prefix: config.queuePrefix,
    budgetBytes: Math.round(config.nodeRedisBudgetMib * 1_048_576),
    users,
    active,
    log: log.child({ component: 'node-redis-budget' }),
    audit: (action, target, asked) => audit.audit(action, target, asked),
    policy: { periodMs: config.nodeRedisBudgetScanSeconds * 1000 },
  });
  budget.start();
  return budget;
}
