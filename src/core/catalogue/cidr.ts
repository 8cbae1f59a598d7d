import { BlockList, isIP } from 'node:net';

// Operator-listed networks (RBD_FENCE_CIDRS): `192.0.2.0/24`, `2001:db8::/32`. Validated when the
// configuration is read, matched with node's own BlockList so prefix arithmetic is not ours. An
// address matches only a network of its own family: an IPv4 address is never taken to be inside
// an IPv6 range through its mapped form.

export interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

function parseCidr(text: string): Cidr | undefined {
  const m = /^([^/\s]+)\/([0-9]{1,3})$/.exec(text);
  if (!m) return undefined;
  const version = isIP(m[1]!);
  const prefix = Number(m[2]);
  if (version === 0 || prefix > (version === 4 ? 32 : 128)) return undefined;
  return { address: m[1]!, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

export const isCidr = (text: string): boolean => parseCidr(text) !== undefined;

/** The first of `cidrs` (as written) that contains `ip`, or undefined; unparsable entries never match. */
export function cidrContaining(ip: string, cidrs: readonly string[]): string | undefined {
  const version = isIP(ip);
  if (version === 0) return undefined;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (!c || c.family !== family) continue;
    const list = new BlockList();
    list.addSubnet(c.address, c.prefix, c.family);
    if (list.check(ip, family)) return text;
  }
  return undefined;
}
