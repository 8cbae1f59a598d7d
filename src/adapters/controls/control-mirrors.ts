import { knownQueuesKey } from '../redis/known-queues.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import { nodeOfQueue, nodeQueueName } from '../../core/catalogue/queues.ts';
import { controlKeys, queueControlKeys } from '../../core/controls/redis-keys.ts';
import { CONTROL_SEAL_TTL_MS, splitSealed } from '../../core/controls/sealed-records.ts';

// On a Redis Cluster the shared modes and pauses hashes sit in one slot, on one master: every
// agent reading them at a job's start would hold a connection to that master, so every master
// holding a shared key would carry a connection from every node however many shards there are.
// So the receiver copies what each node's agent reads into that node's queue's own slot: one
// hash per node queue (queueControlKeys.controls), written by the receiver only.
//
// What holds:
// - The copies are the records themselves, their seals included: an agent opens a copy exactly
//   as it opens the shared record (same kind, same field, same receiver seal), so nothing a node
//   writes into its own copy can let it, or anyone, do more than the shared record allows.
// - A copy never goes back to an older decision: each field is written only with a generation at
//   least its copy's (the script below), whichever of a change's fan-out and a periodic sync lands
//   last.
// - A copy is complete only as of its `synced` time: the receiver writes every field a node reads
//   before the first job of that node's queue (and at its enrolment), on every change, and all of
//   them again every CONTROL_RESEAL_MS. A reader takes a copy only while `synced` is younger than
//   MIRROR_FRESH_MS; otherwise (no copy yet, no receiver for a while) it reads the shared hashes.

/** How old a copy's last full sync may be for a reader to take it instead of the shared hashes. */
export const MIRROR_FRESH_MS = CONTROL_SEAL_TTL_MS;

type Kind = 'mode' | 'pause';
const mirrorField = (kind: Kind, field: string): string => `${kind}|${field}`;
const SYNCED = 'synced';
/** One script call per copy (each its own slot on a Cluster), several in flight. */
const ONE_AT_A_TIME = { chunk: 1, parallel: 16 };

/**
 * KEYS[1]: a copy. ARGV[1]: its sync time ('' leaves it), then (field, generation, text) triples:
 * each field written only when its generation is at least the copy's (`gen|<field>`).
 */
export const WRITE_COPY = luaScript(
  'volumeMedicWriteCopy',
  `
local n = 0
for i = 2, #ARGV, 3 do
  local f = ARGV[i]
  local cur = tonumber(redis.call('HGET', KEYS[1], 'gen|' .. f) or '-1') or -1
  if tonumber(ARGV[i + 1]) >= cur then
    redis.call('HSET', KEYS[1], f, ARGV[i + 2], 'gen|' .. f, ARGV[i + 1])
    n = n + 1
  end
end
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], '${SYNCED}', ARGV[1]) end
return n`,
  1,
);

interface Entry {
  field: string;
  gen: number;
  text: string;
}

/** A record's generation as stored (0 when it has none: an unsealed record of a test). */
const genOf = (text: string): number => {
  const g = splitSealed(text)?.body['gen'];
  return typeof g === 'number' && Number.isSafeInteger(g) && g >= 0 ? g : 0;
};

/** Whether `field` of a shared hash belongs in the copy of `node` (its own, or one for every node). */
const concerns = (field: string, node: string): boolean => !field.startsWith('node/') || field === `node/${node}`;

/** What a job's start reads from a copy, as the shared hashes' replies (ControlsStore.readStartView). */
export interface CopiedStart {
  modes: (string | null)[];
  pause: (string | null)[];
}

export class ControlMirrors {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #now: () => number;

  constructor(redis: RedisConnection, prefix: string, now: () => number = Date.now) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#now = now;
  }

  #key(queue: string): string {
    return queueControlKeys(this.#prefix, queue).controls;
  }

  async #write(queue: string, synced: number | undefined, entries: readonly Entry[]): Promise<void> {
    const args = entries.flatMap((e) => [e.field, String(e.gen), e.text]);
    await scriptOn(this.#redis, WRITE_COPY)(this.#key(queue), synced === undefined ? '' : String(synced), ...args);
  }

  /**
   * Every field the nodes of `queues` read (default: every known node queue), from the shared
   * hashes as they are now, and each copy marked synced. Throws when a copy was not written.
   */
  async sync(queues?: readonly string[]): Promise<number> {
    const keys = controlKeys(this.#prefix);
    const [all, modes, pause] = await Promise.all([
      queues ? Promise.resolve([...queues]) : this.#redis.smembers(knownQueuesKey(this.#prefix)),
      this.#redis.hgetall(keys.modes),
      this.#redis.hgetall(keys.pause),
    ]);
    const nodeQueues = all.filter((q) => nodeOfQueue(q) !== undefined);
    const at = this.#now();
    // Each record read once: only which of them a copy takes differs by node.
    const entries = [
      ...Object.entries(modes).map(([f, text]) => ({ shared: f, field: mirrorField('mode', f), gen: genOf(text), text })),
      ...Object.entries(pause).map(([f, text]) => ({ shared: f, field: mirrorField('pause', f), gen: genOf(text), text })),
    ];
    await inLanes(nodeQueues, laneShape(this.#redis, { chunk: 1 }, ONE_AT_A_TIME), async (qs) => {
      for (const q of qs) {
        const node = nodeOfQueue(q)!;
        await this.#write(
          q,
          at,
          entries.filter((e) => concerns(e.shared, node)),
        );
      }
      return qs;
    });
    return nodeQueues.length;
  }

  /** One shared record just written: into the copy of its node, or of every known node queue. */
  async fanOut(kind: Kind, field: string, text: string): Promise<void> {
    const entry = { field: mirrorField(kind, field), gen: genOf(text), text };
    const node = field.startsWith('node/') ? field.slice(5) : undefined;
    const queues = node ? [nodeQueueName(node)] : (await this.#redis.smembers(knownQueuesKey(this.#prefix))).filter((q) => nodeOfQueue(q) !== undefined);
    await inLanes(queues, laneShape(this.#redis, { chunk: 1 }, ONE_AT_A_TIME), async (qs) => {
      for (const q of qs) await this.#write(q, undefined, [entry]);
      return qs;
    });
  }

  /**
   * The fields of the shared hashes a job's start reads (ControlsStore's startFields), from its
   * queue's copy, in that order; undefined when there is no copy or its last full sync is older
   * than MIRROR_FRESH_MS (read the shared hashes).
   */
  async readStart(queue: string, fields: { modes: readonly string[]; pause: readonly string[] }): Promise<CopiedStart | undefined> {
    const asked = [...fields.modes.map((f) => mirrorField('mode', f)), ...fields.pause.map((f) => mirrorField('pause', f))];
    const r = await this.#redis.hmget(this.#key(queue), ...asked, SYNCED);
    const synced = Number(r[asked.length] ?? Number.NaN);
    if (!Number.isFinite(synced) || this.#now() - synced > MIRROR_FRESH_MS) return undefined;
    const got = r.slice(0, asked.length).map((v) => v ?? null);
    return { modes: got.slice(0, fields.modes.length), pause: got.slice(fields.modes.length) };
  }
}
