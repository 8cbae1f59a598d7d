import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundedRaw, EVIDENCE_MAX_DEPTH } from '../../../../src/core/catalogue/evidence.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// Issue 20, item 7: a recognised Event with a 5,000-level nested field made the evidence capture
// overflow the stack; the request got a 500 and its whole batch was lost (the event exporter never
// retries). The capture keeps the top 32 levels and says what it left out; the batch is stored.

const events = JSON.parse(readFileSync(new URL('../../../fixtures/events/batch.array.json', import.meta.url), 'utf8')) as unknown[];
const DEEP = `${`{"a":`.repeat(5000)}{}${'}'.repeat(5000)}`;

describe('a recognised Event with a field nested 5,000 levels deep', () => {
  const prefix = uniquePrefix('deep');
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, operatorAuth: 'insecure' }));
  });
  afterAll(async () => {
    await receiver?.close();
    await dropPrefix(prefix);
  });

  it('is stored with the rest of its batch, its evidence cut at the depth limit', async () => {
    const first = JSON.stringify(events[0]).replace(/}$/, `,"deep":${DEEP}}`);
    const body = `[${first},${events
      .slice(1)
      .map((e) => JSON.stringify(e))
      .join(',')}]`;
    const r = await fetch(`${receiver.url}/v1/events`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(202);
    const plain = await fetch(`${receiver.url}/v1/explain?source=events`, {
      method: 'POST',
      body: JSON.stringify(events),
      headers: { 'content-type': 'application/json' },
    });
    const accepted = ((await r.json()) as { accepted: unknown[] }).accepted;
    expect(accepted.length).toBe(((await plain.json()) as { jobs: unknown[] }).jobs.length);
  });

  it('keeps the top levels of a too-deep value and names what it left out', () => {
    const v = boundedRaw(JSON.parse(DEEP)) as Record<string, unknown>;
    let cur: unknown = v;
    for (let i = 0; i < EVIDENCE_MAX_DEPTH; i++) cur = (cur as { a: unknown }).a;
    expect(cur).toBe(`[nested deeper than ${EVIDENCE_MAX_DEPTH} levels: left out]`);
  });
});
