import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { followGenerations, NodeGenerations, nodeGenerationKeys } from '../../../../src/adapters/redis/node-generations.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { GenerationTable } from '../../../../src/core/trust/key-generations.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';

// The credential generations in a real Redis (src/adapters/redis/node-generations.ts), as two
// receiver replicas use them: a Node's deletion raises once however many replicas see it, and
// never for a late event about an older Node; a Node made again while no receiver watched raises
// at its first enrolment (its uid is another); a revoke raises only when something was handed
// out since; readers follow raises and never go back.

describe('node credential generations in Redis', () => {
  const prefix = uniquePrefix('gens');
  const redis = new Redis(redisUrl());
  const other = new Redis(redisUrl());
  const [r1, r2] = [new NodeGenerations(redis, prefix), new NodeGenerations(other, prefix)];
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
    other.disconnect();
  });

  it('keeps a node at generation 0 while the same Node enrols, and stores nothing in the hash read by every replica', async () => {
    expect(await r1.atEnrolment('node-a', 'uid-1')).toBe(0);
    expect(await r2.atEnrolment('node-a', 'uid-1')).toBe(0);
    expect(await redis.hgetall(nodeGenerationKeys(prefix).generations)).toEqual({});
  });

  it("raises once for a Node's deletion seen by every replica, and not for a late event about an older Node", async () => {
    expect(await r1.nodeDeleted('node-a', 'uid-1')).toEqual({ generation: 1, raised: true });
    expect(await r2.nodeDeleted('node-a', 'uid-1')).toEqual({ generation: 1, raised: false });
    // The Node made again enrols at the raised generation, without raising again.
    expect(await r1.atEnrolment('node-a', 'uid-2')).toBe(1);
    // A replica whose watch hands it the old Node's deletion only now leaves the new one alone.
    expect(await r2.nodeDeleted('node-a', 'uid-1')).toEqual({ generation: 1, raised: false });
    expect(await r1.current('node-a')).toBe(1);
  });

  it('raises at enrolment for a Node made again while no receiver watched (another uid)', async () => {
    expect(await r1.atEnrolment('node-b', 'uid-b1')).toBe(0);
    expect(await r2.atEnrolment('node-b', 'uid-b2')).toBe(1);
    expect(await r1.atEnrolment('node-b', 'uid-b2')).toBe(1);
  });

  it('raises on revoke only when something was handed out since the last raise', async () => {
    expect(await r1.atEnrolment('node-c', 'uid-c')).toBe(0);
    expect(await r1.revoke('node-c')).toEqual({ generation: 1, raised: true });
    expect(await r2.revoke('node-c')).toEqual({ generation: 1, raised: false });
    expect(await r1.atEnrolment('node-c', 'uid-c')).toBe(1);
    expect(await r2.revoke('node-c')).toEqual({ generation: 2, raised: true });
    // A node never seen (an upgrade: it may hold generation 0's keys) is raised.
    expect(await r1.revoke('node-d')).toEqual({ generation: 1, raised: true });
  });

  it('lets a reader follow the raises of other replicas, and never go back when Redis does', async () => {
    const table = new GenerationTable();
    const heard: string[] = [];
    const f = followGenerations({ store: r2, table, log: { warn: () => {} }, intervalMs: 50, onRaised: (node, g) => heard.push(`${node}=${g}`) });
    try {
      await f.first;
      expect(table.of(nodeQueueName('node-c'))).toBe(2);
      expect(table.of(nodeQueueName('node-x'))).toBe(0);
      expect(await r1.atEnrolment('node-c', 'uid-c')).toBe(2);
      expect(await r1.revoke('node-c')).toEqual({ generation: 3, raised: true });
      await waitFor('the raise to be seen', async () => (table.of(nodeQueueName('node-c')) === 3 ? true : undefined), 5_000);
      expect(heard).toContain('node-c=3');
      // Someone with a Redis password lowers it: this reader keeps what it saw.
      await redis.hset(nodeGenerationKeys(prefix).generations, 'node-c', '0');
      await redis.incr(nodeGenerationKeys(prefix).version);
      await new Promise((r) => setTimeout(r, 300));
      expect(table.of(nodeQueueName('node-c'))).toBe(3);
    } finally {
      f.close();
    }
  });
});
