import type { Redis } from 'ioredis';
import { controlKeys, type ControlKeys } from './keys.ts';
import { ApprovalRecord, type ApprovalState, parseJson } from './records.ts';

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
  readonly #redis: Redis;
  readonly #keys: ControlKeys;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#keys = controlKeys(prefix);
  }

  async get(jobId: string): Promise<ApprovalRecord | undefined> {
    return parseJson(ApprovalRecord, await this.#redis.get(this.#keys.approval(jobId)));
  }

  async put(rec: ApprovalRecord): Promise<void> {
    await this.#redis.set(this.#keys.approval(rec.jobId), JSON.stringify(rec), 'EX', KEEP_SECONDS);
  }

  /** Moves the record from `from` to `next.state`; false when someone else got there first. */
  async transition(from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    const r = await this.#redis.eval(CAS, 1, this.#keys.approval(next.jobId), from, JSON.stringify(next), String(KEEP_SECONDS));
    return r === 1;
  }
}
