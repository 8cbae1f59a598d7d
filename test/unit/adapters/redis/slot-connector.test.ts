import { describe, expect, it } from 'vitest';
import { masterOfSlot, slotMovedAway } from '../../../../src/adapters/redis/slot-connector.ts';

// The parts of the one-slot connection that read Redis' answers (the rest runs against a real
// Cluster in test/int/adapters/redis/one-slot-connection.int.test.ts).

const asked = { host: '10.0.0.9', port: 7000 };

describe('the master of a slot in a CLUSTER SLOTS reply', () => {
  const reply = [
    [0, 5460, ['10.0.0.1', 7001, 'id1'], ['10.0.0.4', 7004, 'id4']],
    [5461, 10922, ['', 7002, 'id2']],
    [10923, 16383, ['?', 7003, 'id3']],
  ];
  it('is the first node of the range holding the slot', () => {
    expect(masterOfSlot(reply, 0, asked)).toEqual({ host: '10.0.0.1', port: 7001 });
    expect(masterOfSlot(reply, 5460, asked)).toEqual({ host: '10.0.0.1', port: 7001 });
  });
  it("is the node asked when Redis leaves the endpoint out ('' or '?')", () => {
    expect(masterOfSlot(reply, 5461, asked)).toEqual({ host: '10.0.0.9', port: 7002 });
    expect(masterOfSlot(reply, 16383, asked)).toEqual({ host: '10.0.0.9', port: 7003 });
  });
  it('is none for a slot no range holds, or a reply of another shape', () => {
    expect(masterOfSlot([reply[0]], 9000, asked)).toBeUndefined();
    expect(masterOfSlot('ERR', 1, asked)).toBeUndefined();
    expect(masterOfSlot([[0, 16383, ['h', 'not a port']]], 1, asked)).toBeUndefined();
    expect(masterOfSlot([[0, 16383, ['h', 70_000]]], 1, asked)).toBeUndefined();
  });
});

describe('when a command error sends the connection to find its master again', () => {
  const moved = slotMovedAway(42);
  it('for its own slot moved, or a write refused by a demoted master', () => {
    expect(moved(new Error('MOVED 42 10.0.0.2:7002'))).toBe(2);
    expect(moved(new Error("READONLY You can't write against a read only replica."))).toBe(2);
  });
  it('never for a key of another slot (no loop between masters) or any other error', () => {
    expect(moved(new Error('MOVED 43 10.0.0.2:7002'))).toBe(false);
    expect(moved(new Error('NOPERM this user has no permissions'))).toBe(false);
  });
});
