import type { AuditMark } from '../../core/controls/audit-seal.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';

// What the receiver saw of each audit list (src/core/controls/audit-seal.ts): the newest number
// whose seal held and that entry's MAC, kept in Redis rather than in a process's memory, so a list
// a node deleted and started again at 1 is noticed by every replica, also one started after the
// read (a freshly started receiver used to have nothing to compare with).
//
// One hash, outside every queue's keys: a node's own Redis user reaches its queue's keys only
// (src/adapters/redis/node-redis-users.ts), so it can neither lower nor delete the mark of the
// list it restarts. Only the receiver writes it; the cluster worker's user, which reaches every
// key of the prefix, could (docs/threat-model.md, "What remains"). A mark only moves up: the same
// number with another MAC is the evidence of a restart, kept while the entry is in the list.

/** hash scope (a queue's name, or the fleet list's scope) -> `<seq> <mac>` */
export const auditMarksKey = (prefix: string): string => `${prefix}:vm:ctl:audit-marks`;

/**
 * KEYS[1]: the hash. ARGV: (field, number, mark) triples; each is stored only above the field's
 * number. Registered (src/adapters/lua/registry.ts): the agents import this module with the
 * controls store, and every script on their path runs by EVALSHA only.
 */
export const AUDIT_MARKS_RAISE = luaScript(
  'volumeMedicAuditMarksRaise',
  `-- volume-medic: raise audit list marks (src/adapters/controls/audit-marks.ts)
for i = 1, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  local seq = cur and tonumber(string.match(cur, '^(%d+)')) or 0
  if tonumber(ARGV[i + 1]) > seq then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2]) end
end
return 0`,
  1,
);

const parse = (text: string | null | undefined): AuditMark => {
  const m = /^(\d{1,15})(?: ([A-Za-z0-9_-]{1,128}))?$/.exec(text ?? '');
  if (!m) return { seq: 0 };
  return { seq: Number(m[1]), ...(m[2] ? { mac: m[2] } : {}) };
};

export class AuditMarks {
  readonly #redis: RedisConnection;
  readonly #key: string;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#key = auditMarksKey(prefix);
  }

  /** The marks of `scopes`, in their order ({ seq: 0 } for a list not read before). */
  async read(scopes: readonly string[]): Promise<AuditMark[]> {
    if (scopes.length === 0) return [];
    const got = await this.#redis.hmget(this.#key, ...scopes);
    return scopes.map((_, i) => parse(got[i]));
  }

  /** Raises each list's mark to `mark` where it is higher than the stored one. */
  async raise(marks: ReadonlyMap<string, AuditMark>): Promise<void> {
    const args: string[] = [];
    for (const [scope, m] of marks) args.push(scope, String(m.seq), m.mac ? `${m.seq} ${m.mac}` : String(m.seq));
    if (args.length > 0) await scriptOn(this.#redis, AUDIT_MARKS_RAISE)(this.#key, ...args);
  }
}
