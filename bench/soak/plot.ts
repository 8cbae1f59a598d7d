import type { Bucket } from './latency.ts';
import type { Life } from './memory.ts';

// The soak's plot as a plain SVG (no dependency): start latency p50/p99 per bucket on a log scale
// with each fault marked (a line at its injection, a band while a lasting one held), and below it
// the RSS of every process over the same time axis.

export interface PlotFault {
  kind: string;
  /** Seconds since the load started. */
  start: number;
  end: number;
}

const W = 1100;
const PANEL = 300;
const LEFT = 70;
const RIGHT = 170;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#ff7f0e'];

const esc = (s: string): string => s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
const fmt = (x: number): string => x.toFixed(1);

function polyline(points: [number, number][], color: string, width = 1.5): string {
  if (points.length === 0) return '';
  return `<polyline fill="none" stroke="${color}" stroke-width="${width}" points="${points.map(([x, y]) => `${fmt(x)},${fmt(y)}`).join(' ')}"/>`;
}

// long because: two panels' axes, series and labels written out as SVG text
export function soakSvg(o: { title: string; durationS: number; buckets: Bucket[]; normalP99: number; faults: PlotFault[]; rss: Life[]; t0: number }): string {
  const plotW = W - LEFT - RIGHT;
  const x = (s: number): number => LEFT + (Math.max(0, Math.min(o.durationS, s)) / o.durationS) * plotW;
  const out: string[] = [];
  const H = 40 + PANEL + 60 + PANEL + 40;
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${LEFT}" y="20" font-size="14" font-weight="bold">${esc(o.title)}</text>`);

  // Panel 1: latency, log scale.
  const top1 = 40;
  const maxMs = Math.max(1000, ...o.buckets.map((b) => b.p99));
  const lo = 1;
  const ly = (ms: number): number => top1 + PANEL - (Math.log10(Math.max(lo, ms)) / Math.log10(maxMs * 1.2)) * PANEL;
  for (const f of o.faults) {
    if (f.end - f.start > 2)
      out.push(`<rect x="${fmt(x(f.start))}" y="${top1}" width="${fmt(Math.max(1, x(f.end) - x(f.start)))}" height="${PANEL}" fill="#fdd" />`);
    out.push(`<line x1="${fmt(x(f.start))}" x2="${fmt(x(f.start))}" y1="${top1}" y2="${top1 + PANEL}" stroke="#c00" stroke-dasharray="3,2"/>`);
    out.push(`<text transform="translate(${fmt(x(f.start) + 3)},${top1 + 4}) rotate(90)" fill="#900" font-size="10">${esc(f.kind)}</text>`);
  }
  for (let e = 0; 10 ** e <= maxMs * 1.2; e++) {
    const y = ly(10 ** e);
    out.push(`<line x1="${LEFT}" x2="${LEFT + plotW}" y1="${fmt(y)}" y2="${fmt(y)}" stroke="#eee"/>`);
    out.push(`<text x="${LEFT - 5}" y="${fmt(y + 4)}" text-anchor="end">${10 ** e >= 1000 ? `${10 ** (e - 3)} s` : `${10 ** e} ms`}</text>`);
  }
  out.push(`<line x1="${LEFT}" x2="${LEFT + plotW}" y1="${fmt(ly(o.normalP99))}" y2="${fmt(ly(o.normalP99))}" stroke="#999" stroke-dasharray="6,3"/>`);
  out.push(`<text x="${LEFT + plotW + 5}" y="${fmt(ly(o.normalP99) + 4)}" fill="#666">normal p99 ${Math.round(o.normalP99)} ms</text>`);
  out.push(
    polyline(
      o.buckets.map((b) => [x(b.t + 5), ly(b.p99)]),
      '#d62728',
    ),
  );
  out.push(
    polyline(
      o.buckets.map((b) => [x(b.t + 5), ly(b.p50)]),
      '#1f77b4',
    ),
  );
  out.push(`<text x="${LEFT + plotW + 5}" y="${top1 + 15}" fill="#d62728">p99 per 10 s</text>`);
  out.push(`<text x="${LEFT + plotW + 5}" y="${top1 + 30}" fill="#1f77b4">p50 per 10 s</text>`);
  out.push(`<text x="15" y="${top1 + PANEL / 2}" transform="rotate(-90 15 ${top1 + PANEL / 2})" text-anchor="middle">webhook -> job start</text>`);
  out.push(`<rect x="${LEFT}" y="${top1}" width="${plotW}" height="${PANEL}" fill="none" stroke="#333"/>`);

  // Panel 2: RSS per process (each life of a restarted process in the same colour).
  const top2 = top1 + PANEL + 60;
  const names = [...new Set(o.rss.map((l) => l.name))].sort();
  const maxMiB = Math.max(10, ...o.rss.flatMap((l) => l.samples.map((s) => s.mib)));
  const ry = (mib: number): number => top2 + PANEL - (mib / (maxMiB * 1.1)) * PANEL;
  for (let m = 0; m <= maxMiB * 1.1; m += maxMiB > 400 ? 100 : 50) {
    out.push(`<line x1="${LEFT}" x2="${LEFT + plotW}" y1="${fmt(ry(m))}" y2="${fmt(ry(m))}" stroke="#eee"/>`);
    out.push(`<text x="${LEFT - 5}" y="${fmt(ry(m) + 4)}" text-anchor="end">${m} MiB</text>`);
  }
  names.forEach((name, i) => {
    const color = COLORS[i % COLORS.length]!;
    const lives = o.rss.filter((l) => l.name === name);
    for (const l of lives)
      out.push(
        polyline(
          l.samples.map((s) => [x((s.t - o.t0) / 1000), ry(s.mib)]),
          color,
          1.2,
        ),
      );
    out.push(`<text x="${LEFT + plotW + 5}" y="${top2 + 12 + i * 13}" fill="${color}">${esc(name)}</text>`);
  });
  out.push(`<text x="15" y="${top2 + PANEL / 2}" transform="rotate(-90 15 ${top2 + PANEL / 2})" text-anchor="middle">RSS per process</text>`);
  out.push(`<rect x="${LEFT}" y="${top2}" width="${plotW}" height="${PANEL}" fill="none" stroke="#333"/>`);
  const step = o.durationS > 1200 ? 600 : 60;
  for (let s = 0; s <= o.durationS; s += step) {
    for (const base of [top1 + PANEL, top2 + PANEL]) out.push(`<text x="${fmt(x(s))}" y="${base + 14}" text-anchor="middle">${s / 60} min</text>`);
  }
  out.push('</svg>');
  return out.join('\n');
}
