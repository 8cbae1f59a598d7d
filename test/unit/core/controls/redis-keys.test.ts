import { describe, expect, it } from 'vitest';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys, queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';

// The per-node Redis user of issue 30 holds `~<prefix>:vm-node-{<node>}:*`. Redis matches key
// patterns as globs; ours use `*` only, so a regex with everything else literal is the same test
// (test/int/adapters/redis/node-scoped-keys.int.test.ts checks the same against a real redis-server's ACL).
const glob = (pattern: string): RegExp =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
const nodeUser = (prefix: string, node: string): RegExp => glob(`${prefix}:${nodeQueueName(node)}:*`);
const written = (prefix: string, queue: string): string[] => {
  const k = queueControlKeys(prefix, queue);
  return [k.approval('job-1'), k.approval('vm'), k.parked, k.audit];
};

describe('per-queue control keys', () => {
  const prefix = 'vm';
  const nodes = ['a', 'ab', 'a.b', 'b', 'node-1', 'node-10'];

  it("a node's ACL pattern matches every key its worker writes, and no other node's", () => {
    for (const n of nodes) {
      for (const other of nodes) {
        for (const key of written(prefix, nodeQueueName(other))) expect(nodeUser(prefix, n).test(key), `${n} vs ${key}`).toBe(n === other);
      }
    }
  });

  it("no node's pattern matches the fleet list, the transition keys, the registry or the cluster worker's keys", () => {
    const fleet = controlKeys(prefix);
    const shared = [
      fleet.audit,
      fleet.legacyParked,
      fleet.legacyApproval('job-1'),
      fleet.modes,
      fleet.pause,
      `${prefix}:vm:queues`,
      ...written(prefix, CLUSTER_QUEUE),
    ];
    for (const n of nodes) for (const key of shared) expect(nodeUser(prefix, n).test(key), `${n} vs ${key}`).toBe(false);
  });

  it("carries the queue's hash tag (one slot with its BullMQ keys) and a segment no job id can produce", () => {
    for (const key of written(prefix, nodeQueueName('a'))) {
      expect(key.startsWith(`${prefix}:vm-node-{a}:vm:`)).toBe(true);
      // BullMQ's keys are `<prefix>:<queue>:<jobId>[:suffix]` with a job id free of ':'; the
      // job id `vm` gives `...:vm`, `...:vm:lock`, `...:vm:logs`: never one of these.
      expect(['lock', 'logs', 'dependencies', 'processed', 'failed', 'unsuccessful']).not.toContain(key.split(':')[3]);
    }
  });
});
