import { sealRequest } from '../../core/controls/approval-request-seal.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { controlKeys, queueControlKeys, type ControlKeys } from '../../core/controls/redis-keys.ts';
import { ApprovalRecord, type ApprovalState } from '../../core/controls/records.ts';
import { SealedRecords, sealRecord, type ControlTrust } from '../../core/controls/sealed-records.ts';

// One approval record per job, under the job's own queue (queueControlKeys: a node's Redis user
// writes its own jobs' records and no other node's). The worker writes the request (with the
// plan's gated steps); the API decides it in the same key. A decision is a compare-and-set on
// the state, so an approval racing the request's expiry (or a second operator) cannot both win.

/** Records outlive their job by a week: long enough to read back, short enough to clean up. */
const KEEP_SECONDS = 7 * 24 * 3600;

/** -1: no record there (the caller may look in the transition key); 0: another state; 1: moved. */
export const APPROVAL_CAS = luaScript(
  'volumeMedicApprovalCas',
  `
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
local ok, rec = pcall(cjson.decode, cur)
if not ok or rec['state'] ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
return 1`,
  1,
);

export class ApprovalStore {
  readonly #redis: RedisConnection;
  readonly #keys: ControlKeys;
  readonly #sealed: SealedRecords;
  readonly #trust: ControlTrust | undefined;
  readonly #prefix: string;
  readonly #legacy: boolean;

  /**
   * `trust`: the API seals its decisions; a worker verifies them. A decision (approved or
   * rejected) counts only with the API's seal over this very record: a forged rejection would
   * fail the job in a made-up operator's name. A request (written by the worker itself) and an
   * expiry only ever stop a step, so they are taken as they are.
   *
   * `legacy` (the API): a job without a record under its queue is looked up in the shared key
   * agents before per-queue keys wrote (redis-keys.ts legacyApproval), and decided there, so a request
   * an agent not yet upgraded made is not lost in a rolling upgrade. Workers leave it off: an
   * upgraded agent that finds no request under its queue asks again there (a new request the
   * operator sees), and a per-node Redis user could not read the shared key anyway.
   */
  constructor(redis: RedisConnection, prefix: string, trust?: ControlTrust, opts: { legacy?: boolean } = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#legacy = opts.legacy ?? false;
    this.#keys = controlKeys(prefix);
    this.#trust = trust;
    this.#sealed = new SealedRecords(trust);
  }

  /** Job `jobId`'s record under `queue` (undefined: its queue is not known: the transition key only, with `legacy`). */
  async get(queue: string | undefined, jobId: string): Promise<ApprovalRecord | undefined> {
    let text = queue === undefined ? null : await this.#redis.get(queueControlKeys(this.#prefix, queue).approval(jobId));
    if (text === null && this.#legacy) text = await this.#redis.get(this.#keys.legacyApproval(jobId));
    const rec = new SealedRecords(undefined).open(ApprovalRecord, 'approval', jobId, text);
    if (!rec || (rec.state !== 'approved' && rec.state !== 'rejected') || !this.#trust?.ring) return rec;
    // A decision counts only with the API's seal over this very record (job, its creation time,
    // the steps as worded, the decider, until when); without it the worker asks again.
    return this.#sealed.open(ApprovalRecord, 'approval', jobId, text);
  }

  /** The request, under the job's own queue (rec.queue). */
  async put(rec: ApprovalRecord): Promise<void> {
    // Sealed by the asking worker (its work key of the queue), so the API can tell it from a forgery.
    const sealed = sealRequest(this.#trust?.audit?.sealer, rec);
    await this.#redis.set(queueControlKeys(this.#prefix, rec.queue).approval(rec.jobId), JSON.stringify(sealed), 'EX', KEEP_SECONDS);
  }

  /**
   * Moves the record of `next.jobId` under `queue` from `from` to `next.state`; false when someone
   * else got there first (or there is none). A decision is sealed by the API. With `legacy`, a
   * record found only in the transition key is moved there (where its agent reads it).
   */
  async transition(queue: string | undefined, from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    const { json } =
      next.state === 'approved' || next.state === 'rejected'
        ? sealRecord(this.#trust, 'approval', next.jobId, next, {
            ttlMs: Math.max(1000, Date.parse(next.validUntil ?? next.expiresAt) - Date.now() + 60_000),
          })
        : { json: JSON.stringify(next) };
    const cas = scriptOn(this.#redis, APPROVAL_CAS);
    const r = queue === undefined ? -1 : Number(await cas(queueControlKeys(this.#prefix, queue).approval(next.jobId), from, json, String(KEEP_SECONDS)));
    if (r === -1 && this.#legacy) return Number(await cas(this.#keys.legacyApproval(next.jobId), from, json, String(KEEP_SECONDS))) === 1;
    return r === 1;
  }
}
