import { afterEach, describe, expect, it, vi } from 'vitest';
import { MicroBatcher, type MicroBatcherOptions } from '../../../../src/core/collections/micro-batcher.ts';

// The batcher both the job dispatcher and the per-node Redis users send through: batches by
// gathering time and size, in order, with a bounded number of sends on their way.

interface Sent {
  batch: number[];
  answer(): void;
  fail(err: Error): void;
}

function recorder(o: Partial<MicroBatcherOptions<number>> = {}) {
  const sent: Sent[] = [];
  const failed: { batch: number[]; err: unknown }[] = [];
  const b = new MicroBatcher<number>({
    gatherMs: 'turn',
    send: (batch) =>
      new Promise<void>((resolve, reject) => {
        sent.push({ batch, answer: resolve, fail: reject });
      }),
    onError: (batch, err) => failed.push({ batch, err }),
    ...o,
  });
  return { b, sent, failed };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('MicroBatcher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends every item added in one turn of the event loop as one batch', async () => {
    const { b, sent } = recorder();
    for (const i of [1, 2, 3]) b.add(i);
    expect(sent).toHaveLength(0);
    await turn();
    expect(sent.map((s) => s.batch)).toEqual([[1, 2, 3]]);
  });

  it('gathers for gatherMs from the first item', () => {
    vi.useFakeTimers();
    const { b, sent } = recorder({ gatherMs: 5 });
    b.add(1);
    vi.advanceTimersByTime(4);
    b.add(2);
    expect(sent).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(sent.map((s) => s.batch)).toEqual([[1, 2]]);
  });

  it('sends maxBatch items at once, at most maxBatch a batch, the rest after', async () => {
    vi.useFakeTimers();
    const { b, sent } = recorder({ gatherMs: 1_000, maxBatch: 2 });
    for (const i of [1, 2, 3]) b.add(i);
    expect(sent.map((s) => s.batch)).toEqual([[1, 2]]);
    sent[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((s) => s.batch)).toEqual([[1, 2], [3]]);
  });

  it('holds a due batch while maxInFlight sends are on their way, then sends all that waited in one', async () => {
    const { b, sent } = recorder({ maxInFlight: 1 });
    b.add(1);
    await turn();
    b.add(2);
    await turn();
    b.add(3);
    await turn();
    expect(sent.map((s) => s.batch)).toEqual([[1]]);
    sent[0]!.answer();
    await turn();
    expect(sent.map((s) => s.batch)).toEqual([[1], [2, 3]]);
  });

  it('sends one more alongside after stallMs when the sends on their way are slow', async () => {
    vi.useFakeTimers();
    const { b, sent } = recorder({ maxInFlight: 2, stallMs: 20 });
    for (const i of [1, 2, 3]) {
      b.add(i);
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(sent.map((s) => s.batch)).toEqual([[1], [2]]);
    await vi.advanceTimersByTimeAsync(19);
    expect(sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent.map((s) => s.batch)).toEqual([[1], [2], [3]]);
  });

  it('fails only the batch whose send rejected or threw', async () => {
    let calls = 0;
    const failed: { batch: number[]; err: unknown }[] = [];
    const b = new MicroBatcher<number>({
      gatherMs: 'turn',
      send: async (batch) => {
        calls++;
        if (batch[0] === 1) throw new Error('down');
      },
      onError: (batch, err) => failed.push({ batch, err }),
    });
    b.add(1);
    await turn();
    b.add(2);
    await b.drain();
    expect(calls).toBe(2);
    expect(failed).toEqual([{ batch: [1], err: new Error('down') }]);
    const throwing = recorder({
      send: () => {
        throw new Error('sync');
      },
    });
    throwing.b.add(7);
    await throwing.b.drain();
    expect(throwing.failed).toEqual([{ batch: [7], err: new Error('sync') }]);
  });

  it('drain sends what is gathering at once and resolves when every send has answered', async () => {
    vi.useFakeTimers();
    const { b, sent } = recorder({ gatherMs: 60_000 });
    b.add(1);
    let drained = false;
    void b.drain().then(() => {
      drained = true;
    });
    expect(sent.map((s) => s.batch)).toEqual([[1]]);
    expect(b.waiting).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toBe(false);
    sent[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toBe(true);
    await b.drain();
  });
});
