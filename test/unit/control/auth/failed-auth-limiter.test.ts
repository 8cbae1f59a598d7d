import { describe, expect, it } from 'vitest';
import { FailedAuthLimiter, clientKey } from '../../../../src/control/auth/failed-auth-limiter.ts';

describe('the failed-auth limiter', () => {
  it('lets an address fail perMinute times, then asks it to wait until one failure has refilled', () => {
    let t = 0;
    const l = new FailedAuthLimiter({ perMinute: 6, now: () => t });
    for (let i = 0; i < 6; i++) {
      expect(l.retryAfter('192.0.2.1')).toBeUndefined();
      l.failed('192.0.2.1');
    }
    // Empty: one failure refills in 60/6 = 10 s.
    expect(l.retryAfter('192.0.2.1')).toBe(10);
    t = 4_000;
    expect(l.retryAfter('192.0.2.1')).toBe(6);
    t = 10_000;
    expect(l.retryAfter('192.0.2.1')).toBeUndefined();
    // Other addresses have their own bucket.
    expect(l.retryAfter('192.0.2.2')).toBeUndefined();
  });

  it('refills to at most perMinute, however long the address stayed away', () => {
    let t = 0;
    const l = new FailedAuthLimiter({ perMinute: 2, now: () => t });
    l.failed('192.0.2.1');
    t = 3_600_000;
    l.failed('192.0.2.1');
    l.failed('192.0.2.1');
    expect(l.retryAfter('192.0.2.1')).toBe(30);
  });

  it('counts an IPv6 /64 as one client, and an IPv4-mapped address as its IPv4 address', () => {
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('192.0.2.7')).toBe('192.0.2.7');
    const t = 0;
    const l = new FailedAuthLimiter({ perMinute: 1, now: () => t });
    l.failed('2001:db8:1:2::1');
    expect(l.retryAfter('2001:db8:1:2::9999')).toBe(60);
    expect(l.retryAfter('2001:db8:1:3::1')).toBeUndefined();
  });

  it('charges a failure before the outcome is known, refuses the charge once empty, and gives it back when forgiven', () => {
    const t = 0;
    const l = new FailedAuthLimiter({ perMinute: 2, now: () => t });
    // Two attempts in flight at once: both charged, a third waits before anything is asked.
    expect(l.charge('192.0.2.1')).toBeUndefined();
    expect(l.charge('192.0.2.1')).toBeUndefined();
    expect(l.charge('192.0.2.1')).toBe(30);
    // Both turned out right: the budget is whole again.
    l.forgive('192.0.2.1');
    l.forgive('192.0.2.1');
    expect(l.charge('192.0.2.1')).toBeUndefined();
    expect(l.charge('192.0.2.1')).toBeUndefined();
    expect(l.retryAfter('192.0.2.1')).toBe(30);
  });

  it('0 per minute: no limit', () => {
    const l = new FailedAuthLimiter({ perMinute: 0 });
    for (let i = 0; i < 1000; i++) l.failed('192.0.2.1');
    expect(l.retryAfter('192.0.2.1')).toBeUndefined();
  });
});
