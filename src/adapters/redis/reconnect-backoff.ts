// Reconnect delays with full jitter: random(0, min(cap, base * 2^(n-1))) for the n-th attempt.
// After a Redis restart every agent of the fleet loses its connection at the same instant; a
// delay without jitter (the old `min(n * 200, 5000)`) brings them all back in the same 200 ms
// slots. Full jitter spreads them over the whole, growing window ("Exponential Backoff And
// Jitter", AWS Architecture Blog).

export interface Backoff {
  /** Upper bound of the first attempt's window, ms. */
  baseMs: number;
  /** Largest window, ms. */
  capMs: number;
}

export function fullJitter(b: Backoff, random: () => number = Math.random): (attempt: number) => number {
  return (attempt) => {
    const n = Math.max(1, Math.floor(attempt));
    // 2^(n-1) overflows to Infinity for large n, which min() turns into the cap.
    const window = Math.min(b.capMs, b.baseMs * 2 ** (n - 1));
    return Math.floor(random() * window);
  };
}

/** The receiver's (and cluster worker's) producer connections: back quickly, webhooks wait on them. */
export const PRODUCER_BACKOFF: Backoff = { baseMs: 100, capMs: 2_000 };
/** Agents' and workers' connections: thousands of them, so a wider window. */
export const WORKER_BACKOFF: Backoff = { baseMs: 200, capMs: 5_000 };
