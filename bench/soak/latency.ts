import { percentile } from '../lib/stats.ts';
import type { FaultRecord } from './faults.ts';

// Start latency (webhook first sent -> job started) over time: p50/p99 per bucket, the normal p99
// (the warm-up's, before any fault) and each fault's recovery: from the fault (a lasting one:
// from when it was lifted) to the start of the first window, at or after the fault's end, whose
// webhooks started within the normal p99.

export interface Bucket {
  /** Seconds since the load started. */
  t: number;
  n: number;
  p50: number;
  p99: number;
}

export function buckets(samples: readonly { at: number; ms: number }[], t0: number, widthMs: number): Bucket[] {
  const by = new Map<number, number[]>();
  for (const s of samples) {
    const b = Math.floor((s.at - t0) / widthMs);
    if (b < 0) continue;
    let xs = by.get(b);
    if (!xs) by.set(b, (xs = []));
    xs.push(s.ms);
  }
  return [...by.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([b, xs]) => {
      xs.sort((x, y) => x - y);
      return { t: (b * widthMs) / 1000, n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99) };
    });
}

export interface Recovery {
  kind: string;
  /** Seconds since the load started. */
  at: number;
  /** ms; undefined: never back under the normal p99 before the next fault or the end. */
  recoveryMs: number | undefined;
  /** p99 of the webhooks sent from the fault to its recovery. */
  worstP99Ms: number;
}

export function recoveries(
  samples: readonly { at: number; ms: number }[],
  faults: readonly FaultRecord[],
  normalP99: number,
  windowMs: number,
  endAt: number,
): Recovery[] {
  return faults.map((f, i) => {
    const lasting = f.kind === 'api-503' || f.kind === 'api-slow';
    const from = lasting ? f.end : f.start;
    const until = faults[i + 1]?.start ?? endAt;
    let recoveredAt: number | undefined;
    for (let w = f.end; w + windowMs <= until; w += windowMs) {
      const xs = samples.filter((s) => s.at >= w && s.at < w + windowMs).map((s) => s.ms);
      if (xs.length < 5) continue;
      xs.sort((a, b) => a - b);
      if (percentile(xs, 99) <= normalP99) {
        recoveredAt = w;
        break;
      }
    }
    const hit = samples
      .filter((s) => s.at >= f.start && s.at < (recoveredAt ?? until))
      .map((s) => s.ms)
      .sort((a, b) => a - b);
    return {
      kind: f.kind,
      at: f.start,
      recoveryMs: recoveredAt === undefined ? undefined : Math.max(0, recoveredAt - from),
      worstP99Ms: hit.length ? percentile(hit, 99) : 0,
    };
  });
}
