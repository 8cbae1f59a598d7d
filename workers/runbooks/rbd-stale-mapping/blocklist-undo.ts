import { z } from '../../../src/core/zod.ts';

// What `ceph osd blocklist add` we ran, per node: the exact address string, when, for which job
// and for how long. `ceph osd blocklist rm` takes the exact entry, and volume-medic lifts only
// entries it added itself (another fencer's, e.g. csi-addons' NetworkFence, stay: docs/decisions/0008
// §1.6): out-of-service-taint-release reads these records when the node comes back. One hash in
// Redis under the installation's prefix, written only by the cluster worker (a singleton), parsed
// when read back (Redis is a boundary).

const BlocklistUndoRecord = z.object({
  address: z.string().check(z.maxLength(200)),
  node: z.string(),
  job: z.string(),
  addedAt: z.string(),
  expirySeconds: z.number(),
});
type BlocklistUndoRecord = z.infer<typeof BlocklistUndoRecord>;

/** The few hash commands the store needs (ioredis' RedisConnection has them). */
export interface HashRedis {
  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, field: string, value: string): Promise<unknown>;
}

export interface BlocklistUndo {
  add(record: BlocklistUndoRecord): Promise<void>;
  /** This node's records whose entry has not expired by `now` (an expired entry is gone from Ceph by itself). */
  forNode(node: string, now: Date): Promise<BlocklistUndoRecord[]>;
}

const blocklistUndoKey = (prefix: string): string => `${prefix}:vm:blocklist-undo`;

export function redisBlocklistUndo(redis: HashRedis, prefix: string): BlocklistUndo {
  const key = blocklistUndoKey(prefix);
  const read = async (node: string): Promise<BlocklistUndoRecord[]> => {
    const text = await redis.hget(key, node);
    if (!text) return [];
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new Error(`the blocklist undo record of node ${node} is not JSON`);
    }
    return z.array(BlocklistUndoRecord).parse(raw);
  };
  const live = (r: BlocklistUndoRecord, now: Date): boolean => Date.parse(r.addedAt) + r.expirySeconds * 1000 > now.getTime();
  return {
    async add(record) {
      const kept = (await read(record.node).catch(() => [])).filter((r) => r.address !== record.address && live(r, new Date(record.addedAt)));
      await redis.hset(key, record.node, JSON.stringify([...kept, record]));
    },
    async forNode(node, now) {
      return (await read(node)).filter((r) => live(r, now));
    },
  };
}
