import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { addUp, finishedExposition, MAX_COUNT, recordFinished } from '../../../../src/adapters/stats/job-stats.ts';

// The stats hash in memory: what recordFinished writes, what the exposition reads.
function fakeRedis(): Redis & { hash: Map<string, number> } {
  const hash = new Map<string, number>();
  const ops: (() => void)[] = [];
  const pipeline = {
    hincrby: (_k: string, f: string, n: number) => {
      ops.push(() => hash.set(f, (hash.get(f) ?? 0) + n));
      return pipeline;
    },
    hincrbyfloat: (_k: string, f: string, n: number) => {
      ops.push(() => hash.set(f, (hash.get(f) ?? 0) + n));
      return pipeline;
    },
    get length() {
      return ops.length;
    },
    exec: async () =>
      ops.splice(0).map((o) => {
        o();
        return [null, 1];
      }),
  };
  // No queue recorded: the exposition reads the shared hash only.
  return {
    hash,
    pipeline: () => pipeline,
    smembers: async () => [],
    hgetall: async () => Object.fromEntries([...hash].map(([k, v]) => [k, String(v)])),
  } as never;
}

describe('job statistics', () => {
  it('writes one bucket per job and exposes cumulative Prometheus buckets', async () => {
    const r = fakeRedis();
    for (const d of [0.05, 0.7, 0.7, 42, 5000]) await recordFinished(r, 'p', 'rb', 'succeeded', d);
    // One counter per runbook, outcome and bucket (and the sum): 2 commands per job.
    expect([...r.hash.keys()].filter((k) => k.startsWith('ran|')).sort()).toEqual([
      'ran|rb|succeeded|+Inf',
      'ran|rb|succeeded|0.1',
      'ran|rb|succeeded|1',
      'ran|rb|succeeded|60',
    ]);
    const text = await finishedExposition(r, 'p');
    const bucket = (le: string) => Number(new RegExp(`_bucket\\{runbook="rb",le="${le.replace('+', '\\+')}"\\} (\\d+)`).exec(text)?.[1]);
    expect([bucket('0.1'), bucket('0.5'), bucket('1'), bucket('30'), bucket('60'), bucket('900'), bucket('+Inf')]).toEqual([1, 1, 3, 3, 4, 4, 5]);
    expect(text).toMatch(/volume_medic_job_duration_seconds_count\{runbook="rb"\} 5/);
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="rb",outcome="succeeded"\} 5/);
    // Whole milliseconds in an integer counter, exposed in seconds.
    expect(r.hash.get('summs|rb')).toBe(50 + 700 + 700 + 42_000 + 5_000_000);
    expect(text).toMatch(/volume_medic_job_duration_seconds_sum\{runbook="rb"\} 5043\.45\b/);
  });

  it('adds the seconds summed before (HINCRBYFLOAT) to the milliseconds summed now', async () => {
    const r = fakeRedis();
    r.hash.set('sum|rb', 1.5);
    await recordFinished(r, 'p', 'rb', 'succeeded', 0.25);
    expect(await finishedExposition(r, 'p')).toMatch(/volume_medic_job_duration_seconds_sum\{runbook="rb"\} 1\.75\b/);
  });

  it('adds what earlier versions wrote (finished per outcome, buckets per job) and jobs that never ran', async () => {
    const r = fakeRedis();
    r.hash.set('finished|rb|failed', 2);
    r.hash.set('in|rb|0.5', 2);
    r.hash.set('finished|rb|no-agent', 1);
    await recordFinished(r, 'p', 'rb', 'failed', 0.2);
    await recordFinished(r, 'p', 'rb', 'succeeded', 7);
    const text = await finishedExposition(r, 'p');
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="rb",outcome="failed"\} 3\n/);
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="rb",outcome="succeeded"\} 1\n/);
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="rb",outcome="no-agent"\} 1\n/);
    expect(text).toMatch(/_bucket\{runbook="rb",le="0.5"\} 3\n/);
    expect(text).toMatch(/_bucket\{runbook="rb",le="15"\} 4\n/);
    expect(text).toMatch(/volume_medic_job_duration_seconds_count\{runbook="rb"\} 4\n/);
  });

  it('adds the cumulative buckets written before to the new ones', async () => {
    const r = fakeRedis();
    r.hash.set('bucket|rb|1', 2);
    r.hash.set('bucket|rb|+Inf', 3);
    await recordFinished(r, 'p', 'rb', 'succeeded', 0.2);
    const text = await finishedExposition(r, 'p');
    expect(text).toMatch(/le="1"\} 3/);
    expect(text).toMatch(/le="\+Inf"\} 4/);
  });

  it('adds the hashes up, and a value below 0 or not a number takes nothing from the others', () => {
    const node = { 'ran|rb|failed|1': '3', 'untrusted|job|bad-mac': '2' };
    const liar = { 'ran|rb|failed|1': '-1000', 'untrusted|job|bad-mac': 'many', 'summs|rb': '1e400' };
    expect(addUp([node, liar, { 'ran|rb|failed|1': '1' }])).toEqual({ 'ran|rb|failed|1': 4, 'untrusted|job|bad-mac': 2 });
  });

  it("a count above MAX_COUNT adds nothing: one node cannot drown the fleet's increments in rounding", () => {
    const node = { 'ran|rb|failed|1': '3' };
    const liar = { 'ran|rb|failed|1': '1e300', 'untrusted|job|bad-mac': String(MAX_COUNT + 1) };
    expect(addUp([node, liar, { 'ran|rb|failed|1': String(MAX_COUNT) }])).toEqual({ 'ran|rb|failed|1': 3 + MAX_COUNT });
  });
});
