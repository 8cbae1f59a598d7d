import { describe, expect, it } from 'vitest';
import { cidrContaining, isCidr } from '../../../../src/core/catalogue/cidr.ts';

describe('operator-listed CIDRs', () => {
  it('accepts IPv4 and IPv6 networks and rejects anything else', () => {
    for (const ok of ['192.0.2.0/24', '10.0.0.7/32', '0.0.0.0/0', '2001:db8::/32', 'fd00::1/128']) expect(isCidr(ok), ok).toBe(true);
    for (const bad of ['192.0.2.0', '192.0.2.0/33', '2001:db8::/129', '192.0.2.0/24 ', 'rbd-mirror/24', '300.0.0.0/8', '10.0.0.0/-1', ''])
      expect(isCidr(bad), bad).toBe(false);
  });

  it('finds the listed network an address lies in, and none for an address outside every one', () => {
    const cidrs = ['198.51.100.0/24', '10.20.0.0/16', '2001:db8:1::/48'];
    expect(cidrContaining('10.20.3.4', cidrs)).toBe('10.20.0.0/16');
    expect(cidrContaining('10.21.0.1', cidrs)).toBeUndefined();
    expect(cidrContaining('2001:db8:1:ff::9', cidrs)).toBe('2001:db8:1::/48');
    expect(cidrContaining('2001:db8:2::9', cidrs)).toBeUndefined();
    expect(cidrContaining('not-an-ip', cidrs)).toBeUndefined();
  });

  it('never matches an address of the other family (no IPv4-mapped surprises)', () => {
    expect(cidrContaining('10.20.3.4', ['::/0'])).toBeUndefined();
    expect(cidrContaining('::ffff:10.20.3.4', ['10.0.0.0/8'])).toBeUndefined();
  });
});
