import { TaintSighting, parseJson } from '../../core/controls/records.ts';
import { controlKeys } from '../../core/controls/redis-keys.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import { type Sealer, verifySeal } from '../../core/trust/seal.ts';
import { z } from '../../core/zod.ts';

// The out-of-service taint's first sight per node (docs/decisions/0008 §4.1), written by the
// receiver's Node watch the first time it sees the taint (HSETNX: replicas agree on the first),
// read back by the same watch to build the job, dropped when the taint goes. Sealed with the
// receiver's key when it has one: the boot recorded here decides whether the node booted since,
// so a record written straight into Redis, or one that does not parse or verify, counts as no
// record (the job then knows no first boot and refuses unless kubelet's Rebooted Event says so).

const SEAL_TTL_MS = 400 * 86_400_000;
const Stored = z.object({ record: TaintSighting, seal: z.optional(z.unknown()) });

export interface SightingRedis {
  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, field: string, value: string): Promise<unknown>;
  hsetnx(key: string, field: string, value: string): Promise<number>;
  hdel(key: string, field: string): Promise<number>;
}

export interface SightingTrust {
  sealer?: Sealer | undefined;
  ring: Keyring;
  allowUnsigned: boolean;
  now?: () => number;
}

const subject = (node: string): string => `oos-first-sight/${node}`;

export class TaintSightings {
  readonly #redis: SightingRedis;
  readonly #key: string;
  readonly #trust: SightingTrust;

  constructor(redis: SightingRedis, prefix: string, trust: SightingTrust) {
    this.#redis = redis;
    this.#key = controlKeys(prefix).taintSightings;
    this.#trust = trust;
  }

  /** The node's record, when there is one that parses and whose seal holds. */
  async get(node: string): Promise<TaintSighting | undefined> {
    const stored = parseJson(Stored, await this.#redis.hget(this.#key, node));
    if (!stored || stored.record.node !== node) return undefined;
    const { record, seal } = stored;
    if (seal === undefined) return this.#trust.allowUnsigned ? record : undefined;
    const now = (this.#trust.now ?? Date.now)();
    return verifySeal(this.#trust.ring, 'control', subject(node), record, seal, now).ok ? record : undefined;
  }

  /**
   * The taint's first sight: the stored record when it is of this taint (same timeAdded), else
   * `seen` becomes it. A record of an earlier taint (removed while nobody watched) or one that
   * does not hold is replaced.
   */
  async firstSight(seen: TaintSighting): Promise<TaintSighting> {
    const stored = await this.get(seen.node);
    if (stored && stored.timeAdded === seen.timeAdded) return stored;
    const text = this.#encode(seen);
    if (stored === undefined && (await this.#redis.hsetnx(this.#key, seen.node, text)) === 1) return seen;
    if (stored === undefined) {
      // Another replica wrote it first (or a record that does not hold is there): take a good one, else replace it.
      const other = await this.get(seen.node);
      if (other && other.timeAdded === seen.timeAdded) return other;
    }
    await this.#redis.hset(this.#key, seen.node, text);
    return seen;
  }

  async drop(node: string): Promise<void> {
    await this.#redis.hdel(this.#key, node);
  }

  #encode(record: TaintSighting): string {
    const sealer = this.#trust.sealer;
    return JSON.stringify(sealer ? { record, seal: sealer.seal('control', subject(record.node), record, SEAL_TTL_MS) } : { record });
  }
}
