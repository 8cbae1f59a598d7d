import { describe, expect, it } from 'vitest';
import { kuredLockHolders } from '../../../../src/core/coordination/kured-lock.ts';

// kured's lock annotation as pkg/daemonsetlock writes it: one lock (--concurrency 1) or a
// multi-lock; TTL a Go time.Duration in nanoseconds, 0 never expiring.

const NOW = new Date('2026-12-07T13:00:00Z');
const lock = (nodeID: string, created = '2026-12-07T12:59:00Z', TTL = 0) => ({ nodeID, metadata: { unschedulable: false }, created, TTL });

describe("kured's reboot lock", () => {
  it('names the node of a single lock', () => {
    expect(kuredLockHolders(JSON.stringify(lock('worker-1')), NOW)).toEqual({ nodes: ['worker-1'] });
  });

  it('names every node of a multi-lock (--concurrency > 1)', () => {
    const value = JSON.stringify({ maxOwners: 2, locks: [lock('worker-1'), lock('worker-2')] });
    expect(kuredLockHolders(value, NOW)).toEqual({ nodes: ['worker-1', 'worker-2'] });
  });

  it('holds nobody when the annotation is absent or empty, or a multi-lock has no locks', () => {
    expect(kuredLockHolders(undefined, NOW)).toEqual({ nodes: [] });
    expect(kuredLockHolders('', NOW)).toEqual({ nodes: [] });
    expect(kuredLockHolders(JSON.stringify({ maxOwners: 2, locks: null }), NOW)).toEqual({ nodes: [] });
  });

  it('takes a lock older than its TTL as released, as kured does, and a TTL of 0 as never expiring', () => {
    const minute = 60e9;
    expect(kuredLockHolders(JSON.stringify(lock('worker-1', '2026-12-07T12:58:00Z', minute)), NOW)).toEqual({ nodes: [] });
    expect(kuredLockHolders(JSON.stringify(lock('worker-1', '2026-12-07T12:59:30Z', minute)), NOW)).toEqual({ nodes: ['worker-1'] });
    expect(kuredLockHolders(JSON.stringify(lock('worker-1', '2020-01-01T00:00:00Z', 0)), NOW)).toEqual({ nodes: ['worker-1'] });
  });

  it('cannot tell from a value that is not JSON, or not a lock (never read as free)', () => {
    expect(kuredLockHolders('worker-1', NOW)).toMatchObject({ error: expect.stringContaining('not JSON') });
    expect(kuredLockHolders('{"node":"worker-1"}', NOW)).toMatchObject({ error: expect.stringContaining('neither one lock nor a multi-lock') });
  });
});
