import { z } from '../zod.ts';
import { isCidr } from '../catalogue/cidr.ts';

// Types several sections share. Module constants, as before the sections: small, and every
// process reads some of them.

export const Port = z.coerce.number().check(z.int(), z.gte(0), z.lte(65535));
export const Millis = z.coerce.number().check(z.int(), z.positive());
/** A boolean from the config file, or true/false (yes/no, 1/0, on/off) from the environment. */
export const Flag = z.union([z.boolean(), z.stringbool()]);
export const NonEmpty = z.string().check(z.minLength(1));

/** A whole number of seconds (or of anything) at least `min`. */
export const Count = (min: number) => z.coerce.number().check(z.int(), z.gte(min));

/** A list of IPv4/IPv6 networks in CIDR form. */
export const Cidrs = (example: string) => z.array(z.string().check(z.refine(isCidr, `an IPv4 or IPv6 network in CIDR form, e.g. ${example}`)));

/** `host:port` (IPv6 in brackets); a port is required: a default would hide a typo. */
export const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):([0-9]{1,5})$/;
export const HostPort = z.string().check(
  z.refine((v) => {
    const m = HOST_PORT.exec(v);
    return m !== null && Number(m[3]) >= 1 && Number(m[3]) <= 65535;
  }, 'expected host:port with a port from 1 to 65535 (e.g. redis-0.redis:26379)'),
);

export const ServiceAccounts = z.array(z.string().check(z.regex(/^[a-z0-9-]{1,63}\/[a-z0-9.-]{1,253}$/, '<namespace>/<service account>')));
