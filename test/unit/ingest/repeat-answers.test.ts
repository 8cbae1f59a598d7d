import { describe, expect, it } from 'vitest';
import { RepeatAnswers } from '../../../src/ingest/repeat-answers.ts';
import type { IngestResult } from '../../../src/ingest/ingest.ts';

const result = (key: string): IngestResult => ({
  accepted: [{ id: key, queue: 'vm-node-w1', runbook: 'residual-multipath-cleanup', node: 'w1', key, deduplicated: false }],
  ignored: [{ reason: 'alert-still-firing', detail: 'firing', source: 'alertmanager', index: 1 }],
});

describe('RepeatAnswers', () => {
  it('keeps the answer a repeat gets: every job deduplicated, the ignored reasons as they were', () => {
    const r = new RepeatAnswers();
    r.remember('{"a":1}', result('k1'));
    const a = r.get('{"a":1}')!;
    expect(JSON.parse(a.text)).toEqual({
      accepted: [{ id: 'k1', queue: 'vm-node-w1', runbook: 'residual-multipath-cleanup', node: 'w1', key: 'k1', deduplicated: true }],
      ignored: [{ reason: 'alert-still-firing', detail: 'firing', source: 'alertmanager', index: 1 }],
    });
    expect(a.jobs).toMatchObject([{ queue: 'vm-node-w1', key: 'k1', runbook: 'residual-multipath-cleanup' }]);
    expect(a.ignored).toMatchObject([{ source: 'alertmanager', reason: 'alert-still-firing' }]);
    expect(a.text).toBe(a.text);
    expect(r.get('{"a":1} ')).toBeUndefined();
  });

  it('does not keep bodies that made no job, or larger than maxBodyChars', () => {
    const r = new RepeatAnswers({ maxBodyChars: 10 });
    r.remember('{"none":1}', { accepted: [], ignored: [] });
    r.remember('{"much too long":1}', result('k2'));
    expect(r.size).toBe(0);
  });

  it('forgets the oldest bodies first when over maxTotalChars', () => {
    const r = new RepeatAnswers({ maxBodyChars: 100, maxTotalChars: 25 });
    for (const b of ['{"b":1111111}', '{"b":2222222}', '{"b":3333333}']) r.remember(b, result(b));
    expect(r.size).toBe(1);
    expect(r.get('{"b":1111111}')).toBeUndefined();
    expect(r.get('{"b":3333333}')).toBeDefined();
  });
});
