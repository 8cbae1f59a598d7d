// A read shared by every console request for a while: one request at a time computes it; while a
// newer one is computed the others get the last one (a page never waits except for the very
// first), so a page's own work stays bounded whatever the fleet's size. A read that takes long is
// taken less often: a value lives at least `ttlMs` and at least 10x its read's duration, so
// reading keeps under a tenth of the time.

export interface Cached<T> {
  /** When the read finished (ms). */
  at: number;
  /** How long it took (ms). */
  tookMs: number;
  value: T;
}

export class CachedRead<T> {
  readonly #read: () => Promise<T>;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #last: Cached<T> | undefined;
  #running: Promise<Cached<T>> | undefined;

  constructor(read: () => Promise<T>, o: { ttlMs: number; now?: () => number }) {
    this.#read = read;
    this.#ttlMs = o.ttlMs;
    this.#now = o.now ?? Date.now;
  }

  async get(): Promise<Cached<T>> {
    const last = this.#last;
    if (last && this.#now() - last.at < Math.max(this.#ttlMs, 10 * last.tookMs)) return last;
    this.#running ??= this.#take().finally(() => {
      this.#running = undefined;
    });
    // A stale answer now beats a fresh one later: the next request gets the new one.
    if (last) {
      this.#running.catch(() => undefined);
      return last;
    }
    return this.#running;
  }

  async #take(): Promise<Cached<T>> {
    const started = this.#now();
    const value = await this.#read();
    const at = this.#now();
    this.#last = { at, tookMs: at - started, value };
    return this.#last;
  }
}
