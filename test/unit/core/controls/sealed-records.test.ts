import { describe, expect, it } from 'vitest';
import { ModeOverride, PauseRecord } from '../../../../src/core/controls/records.ts';
import {
  CONTROL_SEAL_TTL_MS,
  SealedRecords,
  sealRecord,
  type ControlMemory,
  type ControlTrust,
  type Known,
  type UntrustedControl,
} from '../../../../src/core/controls/sealed-records.ts';
import { keyringFor } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';

// Generations, tombstones and what a reader keeps (src/core/controls/sealed-records.ts), with real
// seals and an injected clock.

const keys = new Map([['receiver.k1', Buffer.alloc(32, 7)]]);
const T0 = Date.parse('2026-12-04T10:00:00Z');
const FIELD = 'runbook/residual-multipath-cleanup';

function setup(memory?: ControlMemory) {
  let now = T0;
  const clock = () => now;
  const writer: ControlTrust = { sealer: sealerOf(keyringFor('receiver', keys), clock)!, allowUnsigned: false };
  const refused: UntrustedControl[] = [];
  const trust: ControlTrust = {
    ring: keyringFor('receiver', keys),
    allowUnsigned: false,
    now: clock,
    onUntrusted: (u) => refused.push(u),
    ...(memory ? { memory } : {}),
  };
  const record = (body: object, gen: number) => sealRecord(writer, 'mode', FIELD, { ...body, gen }).json;
  const decided = (by: string) => ({ by, why: '', at: new Date(now).toISOString() });
  return {
    refused,
    trust,
    reader: () => new SealedRecords(trust),
    mode: (mode: 'enforce' | 'dry-run', gen: number) => record({ mode, ...decided('alice') }, gen),
    cleared: (gen: number) => record({ cleared: true, ...decided('alice') }, gen),
    pause: (gen: number) => sealRecord(writer, 'pause', 'cluster', { ...decided('bob'), gen }).json,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** A memory like the workers' STATE_DIR file: what one reader saved, the next one loads. */
function fileLike(): ControlMemory {
  let saved = '{}';
  return {
    load: () => new Map(Object.entries(JSON.parse(saved) as Record<string, Known>)),
    save: (m) => {
      saved = JSON.stringify(Object.fromEntries(m));
    },
  };
}

describe('sealed control records', () => {
  it('an older generation put back changes nothing: the newer decision stands, and it is reported as a replay', () => {
    const s = setup();
    const r = s.reader();
    const enforce = s.mode('enforce', 1);
    expect(r.open(ModeOverride, 'mode', FIELD, enforce)?.mode).toBe('enforce');
    expect(r.open(ModeOverride, 'mode', FIELD, s.mode('dry-run', 2))?.mode).toBe('dry-run');
    expect(r.open(ModeOverride, 'mode', FIELD, enforce)?.mode).toBe('dry-run');
    expect(s.refused.map((u) => u.reason)).toEqual(['replayed']);
  });

  it('a clear is a tombstone: the record from before it, put back, stays cleared', () => {
    const s = setup();
    const r = s.reader();
    const enforce = s.mode('enforce', 1);
    r.open(ModeOverride, 'mode', FIELD, enforce);
    expect(r.open(ModeOverride, 'mode', FIELD, s.cleared(2))).toBeUndefined();
    expect(r.open(ModeOverride, 'mode', FIELD, enforce)).toBeUndefined();
    expect(s.refused.map((u) => u.reason)).toEqual(['replayed']);
  });

  it('a record deleted from Redis (not cleared through the API) does not lift it: a pause stands, reported as removed', () => {
    const s = setup();
    const r = s.reader();
    expect(r.open(PauseRecord, 'pause', 'cluster', s.pause(1))?.by).toBe('bob');
    expect(r.open(PauseRecord, 'pause', 'cluster', null)?.by).toBe('bob');
    expect(s.refused.map((u) => u.reason)).toEqual(['removed']);
  });

  it('remembers across a restart (the STATE_DIR file): the replay is still refused by a new reader', () => {
    const memory = fileLike();
    const s = setup(memory);
    const enforce = s.mode('enforce', 1);
    const first = s.reader();
    first.open(ModeOverride, 'mode', FIELD, enforce);
    first.open(ModeOverride, 'mode', FIELD, s.mode('dry-run', 2));
    const restarted = s.reader();
    expect(restarted.open(ModeOverride, 'mode', FIELD, enforce)?.mode).toBe('dry-run');
    // Without the memory, a new reader would have taken it.
    expect(setup().reader().open(ModeOverride, 'mode', FIELD, enforce)?.mode).toBe('enforce');
  });

  it('a lapsed seal: a pause and a dry-run still count (they hold work back), an enforce does not, also not from memory', () => {
    const s = setup();
    const r = s.reader();
    const enforce = s.mode('enforce', 1);
    expect(r.open(ModeOverride, 'mode', FIELD, enforce)?.mode).toBe('enforce');
    const pause = s.pause(1);
    const dry = sealRecord({ sealer: sealerOf(keyringFor('receiver', keys), () => T0)!, allowUnsigned: false }, 'mode', 'node/n1', {
      mode: 'dry-run',
      by: 'x',
      why: '',
      at: 'y',
      gen: 1,
    }).json;
    s.advance(CONTROL_SEAL_TTL_MS + 1);
    expect(r.open(ModeOverride, 'mode', FIELD, enforce)).toBeUndefined();
    expect(r.open(PauseRecord, 'pause', 'cluster', pause)?.by).toBe('bob');
    expect(r.open(ModeOverride, 'mode', 'node/n1', dry)?.mode).toBe('dry-run');
    // A forged record now does not bring the lapsed enforce back through the fallback.
    expect(r.open(ModeOverride, 'mode', FIELD, JSON.stringify({ mode: 'enforce', by: 'm', why: '', at: 'x', gen: 9 }))).toBeUndefined();
    expect(s.refused.map((u) => u.reason)).toEqual(['unsigned']);
  });

  it('a forged record is ignored and the newest accepted one stands', () => {
    const s = setup();
    const r = s.reader();
    r.open(ModeOverride, 'mode', FIELD, s.mode('dry-run', 5));
    const forged = JSON.stringify({ mode: 'enforce', by: 'mallory', why: '', at: 'now', gen: 99 });
    expect(r.open(ModeOverride, 'mode', FIELD, forged)?.mode).toBe('dry-run');
    expect(s.refused.map((u) => u.reason)).toEqual(['unsigned']);
  });
});
