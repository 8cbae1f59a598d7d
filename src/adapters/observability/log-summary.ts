import type { Logger } from './logger.ts';

// A warning that anyone can make us repeat at any rate (a request refused before it is
// authenticated): one line per interval, not one per request. The first after a quiet interval
// is logged as it comes, with its own fields, so a lone refusal (an agent with a skewed clock) is
// seen at once; the rest of the interval add up into one line at its end, with how many there
// were and the fields of the last. What it holds is a count and one entry's fields, whatever the
// flood names.

export interface LogSummaryOptions {
  /** Default 60 s. */
  intervalMs?: number;
}

export class LogSummary {
  readonly #log: Logger;
  readonly #msg: string;
  readonly #intervalMs: number;
  #more = 0;
  #last: Record<string, unknown> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger, msg: string, o: LogSummaryOptions = {}) {
    this.#log = log;
    this.#msg = msg;
    this.#intervalMs = o.intervalMs ?? 60_000;
  }

  /** One more occurrence, with what to say about it. */
  warn(fields: Record<string, unknown>): void {
    if (this.#timer) {
      this.#more++;
      this.#last = fields;
      return;
    }
    this.#log.warn(fields, this.#msg);
    this.#arm();
  }

  #arm(): void {
    this.#timer = setTimeout(() => this.#flush(), this.#intervalMs);
    this.#timer.unref();
  }

  /** The interval's end: its count in one line, and the next interval opens only if there was one. */
  #flush(): void {
    this.#timer = undefined;
    if (this.#more === 0) return;
    const seconds = this.#intervalMs / 1000;
    this.#log.warn({ ...this.#last, more: this.#more, seconds }, `${this.#msg} (${this.#more} more in the last ${seconds} s; the last one's fields shown)`);
    this.#more = 0;
    this.#last = undefined;
    this.#arm();
  }
}
