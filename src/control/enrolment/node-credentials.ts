import { createHmac } from 'node:crypto';
import { atGeneration } from '../../core/trust/key-generations.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import type { Role } from '../../core/trust/roles.ts';
import { workKeyOf } from '../../core/trust/work-keys.ts';

// What enrolment hands a queue's consumer, derived, never stored: so every receiver replica
// answers the same and can apply a node's Redis user again (after a failover) from the registry's
// hash alone. Both depend on the node's generation (src/core/trust/key-generations.ts); at
// generation 0 both are what they were before generations existed
// (test/unit/control/enrolment/node-credentials.test.ts pins them).

/**
 * A node's Redis password at `generation`, from the receiver's own root: Redis gets only its
 * SHA-256. A rotated receiver root changes every node's; a raised generation that node's.
 */
export function nodeRedisPassword(receiverRoot: Buffer, node: string, generation: number): string {
  const label = generation === 0 ? `volume-medic/redis/v1\0${node}` : `volume-medic/redis/v2\0${node}\0${generation}`;
  return createHmac('sha256', receiverRoot).update(label, 'utf8').digest('base64url');
}

/**
 * The work keys of `queue` at `generation` for each of `roles`, by name (`<role>.<kid>`, with
 * `.g<generation>` above 0), base64: one per root of those roles the receiver holds.
 */
export function queueKeys(roots: Keyring, roles: readonly Role[], queue: string, generation: number): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const role of roles)
    for (const [name, root] of roots.verify)
      if (name.startsWith(`${role}.`)) keys[atGeneration(name, generation)] = workKeyOf(root, role, queue, generation).toString('base64');
  return keys;
}
