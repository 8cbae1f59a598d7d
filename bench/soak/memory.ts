import { readFileSync } from 'node:fs';

// RSS of every process of the soak, read from /proc/<pid>/status every few seconds, and its
// least-squares slope per hour over the samples after the warm-up. A process that was killed
// and started again has several lives (one per PID); each long enough one gets its own slope.

interface RssSample {
  t: number;
  mib: number;
}

export interface Life {
  name: string;
  pid: number;
  samples: RssSample[];
}

function rssOf(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export class RssSampler {
  readonly lives = new Map<string, Life>();
  private timer: NodeJS.Timeout | undefined;

  private readonly processes: () => { name: string; pid: number }[];

  constructor(processes: () => { name: string; pid: number }[]) {
    this.processes = processes;
  }

  sample(): void {
    const t = Date.now();
    for (const { name, pid } of this.processes()) {
      const mib = rssOf(pid);
      if (mib === undefined) continue;
      const key = `${name}#${pid}`;
      let life = this.lives.get(key);
      if (!life) this.lives.set(key, (life = { name, pid, samples: [] }));
      life.samples.push({ t, mib });
    }
  }

  start(everyMs: number): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** Least-squares slope of `mib` over time, in MiB per hour. */
function slopePerHour(samples: readonly RssSample[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mt = samples.reduce((s, x) => s + x.t, 0) / n;
  const mm = samples.reduce((s, x) => s + x.mib, 0) / n;
  let num = 0;
  let den = 0;
  for (const x of samples) {
    num += (x.t - mt) * (x.mib - mm);
    den += (x.t - mt) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 3_600_000;
}

export interface Slope {
  name: string;
  pid: number;
  /** Minutes of samples the slope is fitted over. */
  minutes: number;
  firstMiB: number;
  lastMiB: number;
  maxMiB: number;
  mibPerHour: number;
}

/**
 * Each life's slope over its samples between `from` and `to` (epoch ms), for lives with at least
 * `minMs` of them. A life's own first `lifeWarmupMs` are left out too: a process started again
 * mid-run (a killed receiver or agent) loads its modules then, which is not growth.
 */
export function slopes(lives: Iterable<Life>, from: number, to: number, minMs: number, lifeWarmupMs = 60_000): Slope[] {
  const out: Slope[] = [];
  for (const l of lives) {
    const born = l.samples[0]?.t ?? 0;
    const s = l.samples.filter((x) => x.t >= Math.max(from, born + lifeWarmupMs) && x.t <= to);
    if (s.length < 3 || s.at(-1)!.t - s[0]!.t < minMs) continue;
    out.push({
      name: l.name,
      pid: l.pid,
      minutes: Math.round((s.at(-1)!.t - s[0]!.t) / 6_000) / 10,
      firstMiB: round1(s[0]!.mib),
      lastMiB: round1(s.at(-1)!.mib),
      maxMiB: round1(Math.max(...s.map((x) => x.mib))),
      mibPerHour: round1(slopePerHour(s)),
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

/**
 * The live heap a fleet process reports after each full collection (`HEAP <epoch ms> <bytes>`
 * lines, bench/servers/fleet-agents.ts), one life per process, named `<name> heap`.
 */
export function heapLives(children: readonly { name: string; pid: number; lines: readonly string[] }[]): Life[] {
  return children.map(({ name, pid, lines }) => {
    const samples: RssSample[] = [];
    for (const chunk of lines)
      for (const line of chunk.split('\n')) {
        const m = /^HEAP (\d+) (\d+)$/.exec(line);
        if (m) samples.push({ t: Number(m[1]), mib: Number(m[2]) / 1_048_576 });
      }
    return { name: `${name} heap`, pid, samples };
  });
}

/** Every life's samples, relative to `t0` in seconds and rounded to 0.1 MiB: the report's raw data, to fit again. */
export function samplesRecord(lives: Iterable<Life>, t0: number): { name: string; pid: number; samples: [number, number][] }[] {
  return [...lives].map((l) => ({
    name: l.name,
    pid: l.pid,
    samples: l.samples.filter((s) => s.t >= t0).map((s): [number, number] => [Math.round((s.t - t0) / 1000), round1(s.mib)]),
  }));
}

/** A life's highest RSS before `t` (epoch ms), rounded to 0.1 MiB; undefined without samples then. */
export function peakBefore(life: Life | undefined, t: number): number | undefined {
  const before = life?.samples.filter((x) => x.t < t) ?? [];
  return before.length ? round1(Math.max(...before.map((x) => x.mib))) : undefined;
}
