import { pino } from 'pino';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LogSummary } from '../../../../src/adapters/observability/log-summary.ts';

function recordingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'warn' }, sink), lines };
}

describe('a summarised warning', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('logs the first at once, then one line per interval with the count and the last one, whatever the rate', () => {
    const { log, lines } = recordingLogger();
    const s = new LogSummary(log, 'refused', { intervalMs: 10_000 });
    s.warn({ node: 'n0' });
    expect(lines).toMatchObject([{ msg: 'refused', node: 'n0' }]);
    for (let i = 1; i <= 5_000; i++) s.warn({ node: `n${i}` });
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ node: 'n5000', more: 5_000, seconds: 10, msg: "refused (5000 more in the last 10 s; the last one's fields shown)" });
    // Still flooding: the next interval sums up too.
    s.warn({ node: 'x' });
    s.warn({ node: 'y' });
    vi.advanceTimersByTime(10_000);
    expect(lines.slice(2)).toMatchObject([{ node: 'y', more: 2 }]);
  });

  it('after a quiet interval, logs the next one at once again', () => {
    const { log, lines } = recordingLogger();
    const s = new LogSummary(log, 'refused', { intervalMs: 10_000 });
    s.warn({ n: 1 });
    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(1);
    s.warn({ n: 2 });
    expect(lines).toMatchObject([{ n: 1 }, { n: 2, msg: 'refused' }]);
  });
});
