import { describe, expect, it } from 'vitest';
import { RepeatAnswers } from '../../../../src/control/ingest/repeat-answers.ts';
import type { IngestResult } from '../../../../src/control/ingest/ingest.ts';

const result = (key: string): IngestResult => ({
  accepted: [{ id: key, queue: 'vm-node-{w1}', runbook: 'residual-multipath-cleanup', node: 'w1', key, deduplicated: false }],
  ignored: [{ reason: 'alert-still-firing', detail: 'firing', source: 'alertmanager', index: 1 }],
});

const body = (alerts: string, rest = '"receiver":"r"'): string => `{${rest},"alerts":${alerts}}`;

/** find, then remember what the full path made of the body (as routes/webhooks.ts does). */
const remember = (r: RepeatAnswers, b: string, res: IngestResult): void => r.remember(b, r.find(b).alerts, res);

describe('RepeatAnswers', () => {
  it('keeps the answer a repeat gets: every job deduplicated, the ignored reasons as they were', () => {
    const r = new RepeatAnswers();
    remember(r, body('[{"a":1}]'), result('k1'));
    const seen = r.find(body('[{"a":1}]'));
    expect(seen.sameBody).toBe(true);
    const a = seen.answer!;
    expect(JSON.parse(a.text)).toEqual({
      accepted: [{ id: 'k1', queue: 'vm-node-{w1}', runbook: 'residual-multipath-cleanup', node: 'w1', key: 'k1', deduplicated: true }],
      ignored: [{ reason: 'alert-still-firing', detail: 'firing', source: 'alertmanager', index: 1 }],
    });
    expect(a.jobs).toMatchObject([{ queue: 'vm-node-{w1}', key: 'k1', runbook: 'residual-multipath-cleanup' }]);
    expect(a.ignored).toMatchObject([{ source: 'alertmanager', reason: 'alert-still-firing' }]);
    expect(a.text).toBe(a.text);
  });

  it('finds a body that differs outside its alerts by the alerts, and says the rest needs checking', () => {
    const r = new RepeatAnswers();
    remember(r, body('[{"a":1}]'), result('k1'));
    const other = r.find(` ${body('[{"a":1}]', '"receiver":"other","externalURL":"http://am-1"')}\n`);
    expect(other.sameBody).toBe(false);
    expect(other.answer?.jobs).toMatchObject([{ key: 'k1' }]);
    expect(r.find(body('[{"a":2}]')).answer).toBeUndefined();
    expect(r.find(body('[{"a": 1}]')).answer).toBeUndefined();
    expect(r.find('[1]').answer).toBeUndefined();
  });

  it('does not keep bodies that made no job, or longer than maxBodyChars', () => {
    const r = new RepeatAnswers({ maxBodyChars: 40 });
    remember(r, body('[1]'), { accepted: [], ignored: [] });
    remember(r, body(`["${'x'.repeat(40)}"]`), result('k2'));
    expect(r.size).toBe(0);
  });

  it('forgets the oldest bodies first when over maxTotalChars, by body and by alerts', () => {
    const r = new RepeatAnswers({ maxBodyChars: 100, maxTotalChars: 70 });
    for (const n of [1111111, 2222222, 3333333]) remember(r, body(`[${n}]`), result(String(n)));
    expect(r.size).toBe(2);
    expect(r.find(body('[1111111]')).answer).toBeUndefined();
    expect(r.find(body('[1111111]', '"receiver":"x"')).answer).toBeUndefined();
    expect(r.find(body('[3333333]', '"receiver":"x"')).answer).toBeDefined();
  });

  it('does not remember an answer that held a job for an older agent: its next copy is triaged again', () => {
    const r = new RepeatAnswers();
    const held: IngestResult = {
      ...result('k1'),
      ignored: [{ reason: 'agent-too-old', detail: "node w1's agent does not run x yet", source: 'alertmanager' }],
    };
    remember(r, body('[{"a":1}]'), held);
    expect(r.find(body('[{"a":1}]')).answer).toBeUndefined();
  });
});
