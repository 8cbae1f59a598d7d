import { Redis } from 'ioredis';
import type { Tracker } from './tracker.ts';

// Every job answered 202 looked for in Redis two minutes after its 202 (well inside the 15
// minutes a finished job is kept: at the end of a long run the early ones are gone by design),
// and each failed job's reason read soon after it failed, for the same reason. A job missing is
// looked for again on the next round (a failover's resynchronising server may not have it yet)
// and counted lost when missing twice.

export class StoreCheck {
  readonly missing = new Set<string>();
  readonly reasons = new Map<string, string>();
  private readonly checked = new Set<string>();
  private readonly suspect = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  private readonly tracker: Tracker;
  private readonly primaryPort: () => Promise<number>;
  private readonly key: (id: string) => string;

  constructor(tracker: Tracker, primaryPort: () => Promise<number>, key: (id: string) => string) {
    this.tracker = tracker;
    this.primaryPort = primaryPort;
    this.key = key;
  }

  start(everyMs: number, ageMs: number): void {
    this.timer = setInterval(() => void this.round(ageMs), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One round: jobs accepted more than `ageMs` ago not yet found, and failed jobs without a reason. */
  async round(ageMs: number): Promise<void> {
    if (this.running) return;
    this.running = true;
    const r = new Redis({
      port: await this.primaryPort().catch(() => 0),
      host: '127.0.0.1',
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    r.on('error', () => {});
    try {
      const now = Date.now();
      const due = [...this.tracker.jobs.entries()].filter(([id, j]) => !this.checked.has(id) && now - j.acceptedAt >= ageMs).map(([id]) => id);
      const found = await Promise.all(due.map((id) => r.exists(this.key(id))));
      for (const [i, id] of due.entries()) {
        if (found[i] === 1) {
          this.checked.add(id);
          this.suspect.delete(id);
        } else if (this.suspect.has(id)) {
          this.checked.add(id);
          this.missing.add(id);
        } else this.suspect.add(id);
      }
      const failed = [...this.tracker.jobs.entries()].filter(([id, j]) => j.outcome === 'failed' && !this.reasons.has(id)).map(([id]) => id);
      const reasons = await Promise.all(failed.map((id) => r.hget(this.key(id), 'failedReason')));
      for (const [i, id] of failed.entries()) if (reasons[i]) this.reasons.set(id, reasons[i]!.slice(0, 300));
    } catch {
      // Redis between primaries: the next round asks again.
    } finally {
      r.disconnect();
      this.running = false;
    }
  }
}
