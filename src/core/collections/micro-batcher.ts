// Gathers items that arrive one at a time into batches, for a sink that costs per call more than
// per item (a Redis round trip, a pipeline per server): the job dispatcher's script calls
// (src/adapters/jobstore/dispatcher.ts) and the per-node Redis users' ACL changes
// (src/adapters/redis/node-redis-users.ts).
//
// What holds:
// - Items go out in the order they were added; a batch holds at most `maxBatch` of them.
// - A batch is sent when its gathering time is over (the end of this turn of the event loop, or
//   `gatherMs` after its first item), at once when `maxBatch` items wait, and, whatever the
//   gathering time, as soon as a send answers while items wait (they have waited for it already).
// - At most `maxInFlight` sends are on their way: the items of a due batch wait for one to answer
//   and then all go in the next (batches grow with load, calls do not). With `stallMs`, slow sends
//   hold them at most that long before one more is sent alongside.
// - A send that throws or rejects fails its batch, told to `onError`, and nothing else.

export interface MicroBatcherOptions<T> {
  /** Sends one batch (never empty). */
  send(batch: T[]): Promise<void>;
  /** `send` threw or rejected: every item of `batch` failed with `err`. */
  onError(batch: T[], err: unknown): void;
  /** How long a batch gathers: 'turn' until the end of this turn of the event loop (setImmediate), or ms from its first item. */
  gatherMs: number | 'turn';
  /** The most items in one batch (default: no limit); this many waiting are sent at once. */
  maxBatch?: number;
  /** The most sends on their way at once (default 1: one batch at a time, in order). */
  maxInFlight?: number;
  /** How long a due batch waits for a send to answer before it goes alongside (default: it waits). */
  stallMs?: number;
}

export class MicroBatcher<T> {
  readonly #o: MicroBatcherOptions<T>;
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  #pending: T[] = [];
  #gathering: { timer: NodeJS.Timeout; kind: 'timeout' } | { timer: NodeJS.Immediate; kind: 'immediate' } | undefined;
  #stall: NodeJS.Timeout | undefined;
  #inFlight = 0;
  #drained: (() => void)[] = [];

  constructor(o: MicroBatcherOptions<T>) {
    this.#o = o;
    this.#maxBatch = Math.max(1, o.maxBatch ?? Number.POSITIVE_INFINITY);
    this.#maxInFlight = Math.max(1, o.maxInFlight ?? 1);
  }

  /** Items waiting for a batch (not yet handed to `send`). */
  get waiting(): number {
    return this.#pending.length;
  }

  add(item: T): void {
    this.#pending.push(item);
    if (this.#pending.length >= this.#maxBatch) this.#due();
    else this.#gather();
  }

  /** Sends what waits without gathering further, and resolves once nothing waits and no send is on its way. */
  drain(): Promise<void> {
    if (this.#pending.length === 0 && this.#inFlight === 0) return Promise.resolve();
    const drained = new Promise<void>((resolve) => this.#drained.push(resolve));
    if (this.#pending.length > 0) this.#due();
    return drained;
  }

  #gather(): void {
    if (this.#gathering) return;
    const gatherMs = this.#o.gatherMs;
    this.#gathering =
      gatherMs === 'turn' ? { kind: 'immediate', timer: setImmediate(() => this.#due()) } : { kind: 'timeout', timer: setTimeout(() => this.#due(), gatherMs) };
  }

  #stopGathering(): void {
    const g = this.#gathering;
    if (!g) return;
    this.#gathering = undefined;
    if (g.kind === 'immediate') clearImmediate(g.timer);
    else clearTimeout(g.timer);
  }

  /** The gathering time is over: send now, or when a send answers (or the stall ends). */
  #due(): void {
    this.#stopGathering();
    if (this.#inFlight < this.#maxInFlight) {
      this.#send();
      return;
    }
    if (this.#o.stallMs !== undefined)
      this.#stall ??= setTimeout(() => {
        this.#stall = undefined;
        this.#send();
      }, this.#o.stallMs);
  }

  #send(): void {
    clearTimeout(this.#stall);
    this.#stall = undefined;
    if (this.#pending.length === 0) return;
    this.#stopGathering();
    const batch = this.#pending.splice(0, this.#maxBatch);
    this.#inFlight++;
    let sent: Promise<void>;
    try {
      sent = this.#o.send(batch);
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent
      .catch((err: unknown) => this.#o.onError(batch, err))
      .finally(() => {
        this.#inFlight--;
        this.#send();
        if (this.#pending.length === 0 && this.#inFlight === 0) for (const resolve of this.#drained.splice(0)) resolve();
      });
    // More than one batch's worth waits: the next is due at once (when a send slot is free).
    if (this.#pending.length >= this.#maxBatch) this.#due();
  }
}
