import { setTimeout as sleep } from 'node:timers/promises';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';
import type { Sealer } from '../../core/trust/seal.ts';
import { sealAuditEntry } from '../../core/controls/audit-seal.ts';
import type { AuditEntry } from '../../core/controls/records.ts';

// Stores an audit entry under the next number of its list, and only if that number is still the
// next: the script takes the newest entry's number from the list itself and refuses when it is not
// the one the entry was sealed after. A number is used only by the entry stored with it, so a
// writer that dies leaves no gap (which a reader would report as a deleted entry), and two
// writers of one list (receiver replicas) can never store numbers out of order; the loser seals
// again after the winner's number. The number is in the list, so the script touches one key (one
// slot on a Cluster, whatever the list's name). Appends to one list from this process go one after
// another (they would only outbid each other), and it remembers the number it stored last: one
// round trip per entry while no other process writes the list.

export const AUDIT_APPEND = luaScript(
  'volumeMedicAuditAppend',
  `-- volume-medic: append a numbered audit entry (src/adapters/controls/audit-append.ts)
-- KEYS: the list. ARGV: the number the newest entry must carry, the entry, how many entries to keep.
-- Returns -1 when stored, else the newest entry's number (0: none, or not a number).
local head = redis.call('LINDEX', KEYS[1], 0)
local last = 0
if head then
  local ok, e = pcall(cjson.decode, head)
  if ok and type(e) == 'table' and type(e.seq) == 'number' and e.seq >= 1 and e.seq == math.floor(e.seq) then last = e.seq end
end
if last ~= tonumber(ARGV[1]) then return last end
redis.call('LPUSH', KEYS[1], ARGV[2])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[3]) - 1)
return -1
`,
  1,
);

/**
 * Tries before giving up. Each loss means another process stored an entry in between (the fleet
 * makes progress); a short random wait after each keeps a busy writer from winning every round.
 */
const TRIES = 50;
const backoffMs = (lost: number): number => Math.random() * Math.min(200, 2 ** lost);

export class AuditAppender {
  readonly #redis: RedisConnection;
  readonly #sealer: Sealer | undefined;
  readonly #keep: number;
  /** list key -> the number this process stored last there (a guess: the script checks it). */
  readonly #last = new Map<string, number>();
  /** list key -> the append in flight there (this process's appends to one list, one at a time). */
  readonly #tail = new Map<string, Promise<unknown>>();

  constructor(redis: RedisConnection, sealer: Sealer | undefined, keep: number) {
    this.#redis = redis;
    this.#sealer = sealer;
    this.#keep = keep;
  }

  /** Stores `entry` as the next of the list at `key`, sealed for `scope`; returns its number. */
  append(key: string, scope: string, entry: AuditEntry): Promise<number> {
    const run = (this.#tail.get(key) ?? Promise.resolve()).catch(() => {}).then(() => this.#store(key, scope, entry));
    this.#tail.set(key, run);
    // Forget the chain once it is idle, so a process writing many lists keeps no entry per list.
    void run
      .catch(() => {})
      .finally(() => {
        if (this.#tail.get(key) === run) this.#tail.delete(key);
      });
    return run;
  }

  async #store(key: string, scope: string, entry: AuditEntry): Promise<number> {
    let after = this.#last.get(key) ?? 0;
    for (let i = 0; i < TRIES; i++) {
      const seq = after + 1;
      const stored = JSON.stringify(sealAuditEntry(this.#sealer, scope, seq, entry));
      const reply = Number(await scriptOn(this.#redis, AUDIT_APPEND)(key, String(after), stored, String(this.#keep)));
      if (reply === -1) {
        this.#last.set(key, seq);
        return seq;
      }
      if (!Number.isInteger(reply) || reply < 0) throw new Error(`audit list ${key}: unexpected reply from the append script`);
      after = reply;
      await sleep(backoffMs(i));
    }
    throw new Error(`audit list ${key}: another writer stored an entry at each of ${TRIES} tries; this entry was not stored`);
  }
}
