import { isIP } from 'node:net';
import { GenerationalMap } from '../../core/collections/generational-map.ts';

// A token bucket per client address, spent only by failed authentication (a bad or missing
// bearer token, a token the API server does not know, a failed dashboard sign-in). A full bucket
// holds `perMinute` failures and refills at that rate; once it is empty every attempt from that
// address is answered 429 with Retry-After *before* any token is looked at, so a client guessing
// tokens learns nothing more until it refills (a right token included: otherwise the one answer
// that is not 429 would tell it which one was right). IPv6 clients are counted per /64, since
// one host usually holds the whole /64.
//
// It is itself a cache keyed by what a request brings (its address), on paths nobody has
// authenticated yet: bounded by `capacity` addresses (a GenerationalMap that keeps the most
// recently failing; each entry an address key and two numbers). An attacker with more addresses
// than that pushes the oldest out (they get their budget back early), never the memory up.

export interface FailedAuthLimiterOptions {
  perMinute: number;
  now?: () => number;
  /** Addresses remembered (the most recently failing ones). Default 100,000. */
  capacity?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export function clientKey(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  if (ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4) return ip.slice(7);
  const [head = '', tail] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export class FailedAuthLimiter {
  readonly #perMinute: number;
  readonly #now: () => number;
  readonly #buckets: GenerationalMap<string, Bucket>;

  constructor(o: FailedAuthLimiterOptions) {
    this.#perMinute = o.perMinute;
    this.#now = o.now ?? Date.now;
    this.#buckets = new GenerationalMap(o.capacity ?? 100_000);
  }

  #level(key: string): Bucket {
    const t = this.#now();
    const b = this.#buckets.get(key);
    if (!b) return { tokens: this.#perMinute, at: t };
    return { tokens: Math.min(this.#perMinute, b.tokens + ((t - b.at) / 60_000) * this.#perMinute), at: t };
  }

  /** Seconds to wait when the address has no failure left; undefined when it may try. 0 per minute: no limit. */
  retryAfter(ip: string): number | undefined {
    if (this.#perMinute <= 0) return undefined;
    const b = this.#level(clientKey(ip));
    return b.tokens >= 1 ? undefined : Math.max(1, Math.ceil(((1 - b.tokens) / this.#perMinute) * 60));
  }

  /** One failed attempt from the address. */
  failed(ip: string): void {
    if (this.#perMinute <= 0) return;
    const key = clientKey(ip);
    const b = this.#level(key);
    this.#buckets.set(key, { tokens: Math.max(0, b.tokens - 1), at: b.at });
  }

  /**
   * Spends one failure ahead of an attempt whose outcome comes after an await (a TokenReview), so
   * concurrent attempts cannot all pass the check before the first is counted: undefined when
   * spent (forgive gives it back if the attempt turns out right), else the seconds to wait.
   */
  charge(ip: string): number | undefined {
    const wait = this.retryAfter(ip);
    if (wait === undefined) this.failed(ip);
    return wait;
  }

  /** Gives back one failure charged for an attempt that turned out right (or was never judged). */
  forgive(ip: string): void {
    if (this.#perMinute <= 0) return;
    const key = clientKey(ip);
    const b = this.#level(key);
    if (b.tokens + 1 >= this.#perMinute) this.#buckets.delete(key);
    else this.#buckets.set(key, { tokens: b.tokens + 1, at: b.at });
  }
}
