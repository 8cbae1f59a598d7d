import type { RedisConnection } from '../queues/redis.ts';
import { controlKeys, type ControlKeys } from './keys.ts';
import { ApprovalRecord, type ApprovalState } from './records.ts';
import { SealedRecords, sealRecord, type ControlTrust } from './sealed-records.ts';

// One approval record per job. The worker writes the request (with the plan's gated steps);
// the API decides it. A decision is a compare-and-set on the state, so an approval racing the
// request's expiry (or a second operator) cannot both win.

/** Records outlive their job by a week: long enough to read back, short enough to clean up. */
const KEEP_SECONDS = 7 * 24 * 3600;

const CAS = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local ok, rec = pcall(cjson.decode, cur)
if not ok or rec['state'] ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
return 1`;

export class ApprovalStore {
  readonly #redis: RedisConnection;
  readonly #keys: ControlKeys;
  readonly #sealed: SealedRecords;
  readonly #trust: ControlTrust | undefined;

  /**
   * `trust`: the API seals its decisions; a worker verifies them. A decision (approved or
   * rejected) counts only with the API's seal over this very record: a forged rejection would
   * fail the job in a made-up operator's name. A request (written by the worker itself) and an
   * expiry only ever stop a step, so they are taken as they are.
   */
  constructor(redis: RedisConnection, prefix: string, trust?: ControlTrust) {
    this.#redis = redis;
    this.#keys = controlKeys(prefix);
    this.#trust = trust;
    this.#sealed = new SealedRecords(trust);
  }

  async get(jobId: string): Promise<ApprovalRecord | undefined> {
    const text = await this.#redis.get(this.#keys.approval(jobId));
    const rec = new SealedRecords(undefined).open(ApprovalRecord, 'approval', jobId, text);
    if (!rec || (rec.state !== 'approved' && rec.state !== 'rejected') || !this.#trust?.ring) return rec;
    // A decision counts only with the API's seal over this very record (job, its creation time,
    // the steps as worded, the decider, until when); without it the worker asks again.
    return this.#sealed.open(ApprovalRecord, 'approval', jobId, text);
  }

  async put(rec: ApprovalRecord): Promise<void> {
    await this.#redis.set(this.#keys.approval(rec.jobId), JSON.stringify(rec), 'EX', KEEP_SECONDS);
  }

  /** Moves the record from `from` to `next.state`; false when someone else got there first. A decision is sealed by the API. */
  async transition(from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    const { json } = next.state === 'approved' || next.state === 'rejected' ? sealRecord(this.#trust, 'approval', next.jobId, next, { ttlMs: Math.max(1000, Date.parse(next.validUntil ?? next.expiresAt) - Date.now() + 60_000) }) : { json: JSON.stringify(next) };
    const r = await this.#redis.eval(CAS, 1, this.#keys.approval(next.jobId), from, json, String(KEEP_SECONDS));
    return r === 1;
  }
}
