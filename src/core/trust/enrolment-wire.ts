import { z } from '../zod.ts';
import { NodeName } from '../catalogue/names.ts';
import { Role, ROLES, SealKeyId } from './roles.ts';
import type { Keyring } from './keyring.ts';

// POST /v1/enrol: what a consumer of a queue (a node's agent, the cluster worker) sends with its
// projected service-account token, and what the receiver answers: the work keys of that queue
// only (src/core/trust/work-keys.ts) and, when the receiver manages them, the node's own Redis user.
// Both sides parse with these schemas; the answer travels over HTTPS and is never logged.

export const ENROL_PATH = '/v1/enrol';

export const EnrolRequest = z
  .strictObject({
    /** Who enrols: the agent of `node`, or the cluster worker. */
    as: z.enum(['node-agent', 'cluster-worker']),
    /** The node whose agent this is (node-agent only): it must be the node the token's pod runs on. */
    node: z.optional(NodeName),
  })
  .check(z.refine((r) => (r.as === 'node-agent') === (r.node !== undefined), { message: 'node is required for a node agent, and only for it' }));
export type EnrolRequest = z.infer<typeof EnrolRequest>;

const KeyName = z.string().check(
  z.refine((n) => {
    const dot = n.indexOf('.');
    return dot > 0 && Role.safeParse(n.slice(0, dot)).success && SealKeyId.safeParse(n.slice(dot + 1)).success;
  }, 'a key is named <role>.<key id>, with .g<generation> from generation 1'),
);

export const EnrolAnswer = z.strictObject({
  queue: z.string().check(z.minLength(1), z.maxLength(300)),
  /** `<role>.<kid>` -> that role's work key of `queue`, base64 (32 bytes). */
  keys: z.record(KeyName, z.string().check(z.regex(/^[A-Za-z0-9+/]{43}=$/, '32 bytes in base64'))),
  /** The key this consumer seals its own work with (a node agent's checks), one of `keys`. */
  signing: z.optional(KeyName),
  /** The node's own Redis user, when the receiver manages per-node users. */
  redis: z.optional(
    z.strictObject({
      username: z.string().check(z.minLength(1), z.maxLength(200)),
      password: z.string().check(z.minLength(16), z.maxLength(200)),
    }),
  ),
  /** Enrol again after this long (keys rotate; a Redis user may be re-created). */
  renewAfterSeconds: z.number().check(z.int(), z.positive()),
});
export type EnrolAnswer = z.infer<typeof EnrolAnswer>;

/** The keyring an answer makes: work keys of its queue only, sealing with `signing` when given. */
export function ringOfAnswer(a: EnrolAnswer): Keyring {
  const verify = new Map<string, Buffer>(Object.entries(a.keys).map(([name, b64]) => [name, Buffer.from(b64, 'base64')]));
  const signing =
    a.signing && verify.has(a.signing)
      ? {
          role: Role.parse(a.signing.slice(0, a.signing.indexOf('.'))),
          kid: a.signing.slice(a.signing.indexOf('.') + 1),
          key: verify.get(a.signing)!,
        }
      : undefined;
  return { verify, scope: a.queue, ...(signing ? { signing } : {}) };
}

/** The roles whose work each consumer runs, so whose keys of its queue it gets. */
export const RUNS_WORK_OF: Record<EnrolRequest['as'], readonly Role[]> = {
  'node-agent': ROLES,
  'cluster-worker': ['receiver'],
};
