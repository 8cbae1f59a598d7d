import { describe, expect, it } from 'vitest';
import { nodeRedisPassword } from '../../../../src/control/enrolment/node-credentials.ts';

// A node's Redis password is derived from the receiver's root, its name and its generation:
// generation 0 is the password every node had before generations existed, so an upgrade changes
// no node's password (pinned against an independent HMAC), and every raise gives another one.

const ROOT = Buffer.from(Array.from({ length: 32 }, (_, i) => i));

describe("a node's Redis password", () => {
  it('is at generation 0 what it was before generations existed', () => {
    // python3: base64url(hmac.new(bytes(range(32)), b'volume-medic/redis/v1\0node-a', sha256).digest())
    expect(nodeRedisPassword(ROOT, 'node-a', 0)).toBe('s8dpETn-JOptx_vwq-btUXaZhba-QJIbNBV351axwBM');
  });

  it('is another one at every generation, and for every node', () => {
    const all = new Set([0, 1, 2].flatMap((g) => ['node-a', 'node-b'].map((n) => nodeRedisPassword(ROOT, n, g))));
    expect(all.size).toBe(6);
  });
});
