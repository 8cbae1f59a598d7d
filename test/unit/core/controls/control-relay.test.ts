import { describe, expect, it } from 'vitest';
import { RelayedControls, relayFields, relayedFor } from '../../../../src/core/controls/control-relay.ts';
import { ModeOverride, PauseRecord } from '../../../../src/core/controls/records.ts';
import {
  CONTROL_SEAL_TTL_MS,
  SealedRecords,
  sealRecord,
  type ControlTrust,
  type Known,
  type UntrustedControl,
} from '../../../../src/core/controls/sealed-records.ts';
import { keyringFor } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';

// The floor a receiver's relay sets (src/core/controls/control-relay.ts, SealedRecords.learn): a
// relayed record the API sealed is the newest its reader knows of that field, so an older record
// read from Redis afterwards is a replay; nothing relayed can lower what a reader knows, or set a
// floor without the API's seal. Real seals, an injected clock.

const keys = new Map([['receiver.k1', Buffer.alloc(32, 7)]]);
const T0 = Date.parse('2026-12-04T10:00:00Z');
const RUNBOOK = 'runbook/residual-multipath-cleanup';

function setup() {
  let now = T0;
  const clock = () => now;
  const writer: ControlTrust = { sealer: sealerOf(keyringFor('receiver', keys), clock)!, allowUnsigned: false };
  const refused: UntrustedControl[] = [];
  let saved: Record<string, Known> = {};
  const trust: ControlTrust = {
    ring: keyringFor('receiver', keys),
    allowUnsigned: false,
    now: clock,
    onUntrusted: (u) => refused.push(u),
    // As the agent's STATE_DIR file: what one reader saved, the next one loads.
    memory: { load: () => new Map(Object.entries(saved)), save: (m) => (saved = Object.fromEntries(m)) },
  };
  const decided = { by: 'alice', why: '', at: new Date(T0).toISOString() };
  return {
    refused,
    reader: () => new SealedRecords(trust),
    mode: (mode: 'enforce' | 'dry-run', gen: number, field = RUNBOOK) => sealRecord(writer, 'mode', field, { mode, ...decided, gen }).json,
    cleared: (gen: number) => sealRecord(writer, 'mode', RUNBOOK, { cleared: true, ...decided, gen }).json,
    pause: (gen: number) => sealRecord(writer, 'pause', 'cluster', { ...decided, gen }).json,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('the floor a relayed control record sets', () => {
  it('an agent that never read the newer record refuses the older one put back in Redis once the relay taught it the newer one', () => {
    const s = setup();
    const r = s.reader();
    const enforce = s.mode('enforce', 1);
    expect(r.open(ModeOverride, 'mode', RUNBOOK, enforce)?.mode).toBe('enforce');
    // Without the relay: the copy put back reads as the standing decision (the window of issue 44).
    expect(r.open(ModeOverride, 'mode', RUNBOOK, enforce)?.mode).toBe('enforce');
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, s.mode('dry-run', 2))).toBe(true);
    expect(r.open(ModeOverride, 'mode', RUNBOOK, enforce)?.mode).toBe('dry-run');
    expect(s.refused.map((u) => u.reason)).toEqual(['replayed']);
    expect(s.refused[0]?.detail).toMatch(/generation 1 is older than 2/);
  });

  it('holds for a brand-new reader (no memory) and across a restart', () => {
    const s = setup();
    const enforce = s.mode('enforce', 1);
    const fresh = s.reader();
    fresh.learn(ModeOverride, 'mode', RUNBOOK, s.mode('dry-run', 2));
    expect(fresh.open(ModeOverride, 'mode', RUNBOOK, enforce)?.mode).toBe('dry-run');
    expect(s.reader().open(ModeOverride, 'mode', RUNBOOK, enforce)?.mode).toBe('dry-run');
  });

  it('a relayed tombstone is a floor too: an enforce from before the clear stays cleared', () => {
    const s = setup();
    const r = s.reader();
    const enforce = s.mode('enforce', 1);
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, s.cleared(2))).toBe(true);
    expect(r.open(ModeOverride, 'mode', RUNBOOK, enforce)).toBeUndefined();
    // And a relayed pause stands where Redis has the field deleted.
    expect(r.learn(PauseRecord, 'pause', 'cluster', s.pause(3))).toBe(true);
    expect(r.open(PauseRecord, 'pause', 'cluster', null)?.by).toBe('alice');
  });

  it('a relayed record older than what the reader accepted lowers nothing and is no alarm (a replica behind a change)', () => {
    const s = setup();
    const r = s.reader();
    expect(r.open(ModeOverride, 'mode', RUNBOOK, s.mode('dry-run', 2))?.mode).toBe('dry-run');
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, s.mode('enforce', 1))).toBe(false);
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, s.mode('enforce', 2))).toBe(false);
    expect(r.open(ModeOverride, 'mode', RUNBOOK, s.mode('dry-run', 2))?.mode).toBe('dry-run');
    expect(s.refused).toEqual([]);
  });

  it('a relayed record without the API seal for its field sets no floor, and is reported', () => {
    const s = setup();
    const r = s.reader();
    const real = JSON.parse(s.mode('dry-run', 2)) as Record<string, unknown>;
    // Reworded under the same seal; another field's sealed record; no seal at all; not JSON.
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, JSON.stringify({ ...real, gen: 99 }))).toBe(false);
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, s.mode('dry-run', 50, 'node/elsewhere'))).toBe(false);
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, JSON.stringify({ mode: 'dry-run', by: 'm', why: '', at: 'x', gen: 98 }))).toBe(false);
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, '{')).toBe(false);
    expect(s.refused.map((u) => u.reason)).toEqual(['bad-mac', 'bad-mac', 'unsigned', 'malformed']);
    // None of them raised the floor: the operator's generation 3 is taken as usual.
    expect(r.open(ModeOverride, 'mode', RUNBOOK, s.mode('enforce', 3))?.mode).toBe('enforce');
  });

  it('a relayed enforce whose seal lapsed is no floor; a lapsed dry-run or pause still is (they hold work back)', () => {
    const s = setup();
    const r = s.reader();
    const lapsedEnforce = s.mode('enforce', 5);
    const lapsedDry = s.mode('dry-run', 5, 'node/n1');
    s.advance(CONTROL_SEAL_TTL_MS + 1);
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, lapsedEnforce)).toBe(false);
    expect(r.learn(ModeOverride, 'mode', 'node/n1', lapsedDry)).toBe(true);
    expect(r.open(ModeOverride, 'mode', 'node/n1', null)?.mode).toBe('dry-run');
    expect(s.refused.filter((u) => u.reason !== 'removed')).toEqual([]);
  });

  it('a reader that verifies nothing (ALLOW_UNSIGNED_WORK without keys) learns nothing: it keeps its old behaviour', () => {
    const r = new SealedRecords({ allowUnsigned: true });
    expect(r.learn(ModeOverride, 'mode', RUNBOOK, setup().mode('dry-run', 2))).toBe(false);
    expect(r.open(ModeOverride, 'mode', RUNBOOK, JSON.stringify({ mode: 'enforce', by: 'a', why: '', at: 'x' }))?.mode).toBe('enforce');
  });
});

describe('the relay on the wire', () => {
  it("names every field a node's jobs read: its own mode and pause, the cluster's pause, each runbook's mode and pause", () => {
    const keysOf = relayFields('n1').map((f) => `${f.kind}/${f.field}`);
    expect(keysOf).toEqual(expect.arrayContaining(['mode/node/n1', 'pause/node/n1', 'pause/cluster', `mode/${RUNBOOK}`, `pause/${RUNBOOK}`]));
    expect(keysOf).not.toContain('mode/node/n2');
    expect(RelayedControls.safeParse(Object.fromEntries(keysOf.map((k) => [k, '{}']))).success).toBe(true);
  });

  it("an agent takes only its own node's fields from a relay; anything else is dropped", () => {
    const taken = relayedFor('n1', { 'mode/node/n1': 'a', 'mode/node/n2': 'b', 'pause/cluster': 'c', 'mode/runbook/made-up': 'd' });
    expect(taken).toEqual([
      { kind: 'mode', field: 'node/n1', text: 'a' },
      { kind: 'pause', field: 'cluster', text: 'c' },
    ]);
    expect(relayedFor('n1', undefined)).toEqual([]);
  });

  it('refuses a relay of other kinds, too many fields or an over-long record', () => {
    expect(RelayedControls.safeParse({ 'approval/j1': '{}' }).success).toBe(false);
    expect(RelayedControls.safeParse(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`mode/node/n${i}`, '{}']))).success).toBe(false);
    expect(RelayedControls.safeParse({ 'mode/node/n1': 'x'.repeat(10_000) }).success).toBe(false);
  });
});
