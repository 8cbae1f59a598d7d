import type { Logger } from '../../adapters/observability/logger.ts';
import { followGenerations } from '../../adapters/redis/node-generations.ts';
import type { GenerationTable } from '../../core/trust/key-generations.ts';
import { NodeRevocation } from '../enrolment/node-revocation.ts';
import type { EnrolmentModule } from './enrolment-module.ts';

// Revocable node credentials (docs/decisions/0005-revocable-node-credentials.md): with node
// agents enrolling, this replica follows every node's credential generation in Redis (its roots
// derive with `table`), raises it on a revoke and on a Node's deletion, and drops what it cached
// of a node another replica raised.

export interface RevocationModule {
  revocation: NodeRevocation;
  /** Settles once the generations were read (or could not be: then the next poll tries). */
  ready: Promise<void>;
  close(): void;
}

/** How long the start waits for the first read before taking requests anyway. */
const FIRST_READ_MS = 5_000;

export function startRevocation(
  log: Logger,
  enrol: EnrolmentModule,
  table: GenerationTable | undefined,
  audit: (action: string, target: string, asked: { by: string; why?: string }) => Promise<void>,
): RevocationModule | undefined {
  const store = enrol.generations;
  if (!store || !table) return undefined;
  const users = enrol.nodeUsers;
  const identities = enrol.enrolment?.identities;
  const revocation = new NodeRevocation({
    generations: store,
    table,
    ...(users ? { users } : {}),
    ...(identities ? { identities } : {}),
    audit,
    log: log.child({ component: 'revocation' }),
  });
  const follower = followGenerations({ store, table, log, onRaised: (node) => revocation.raisedElsewhere(node) });
  let timer: NodeJS.Timeout | undefined;
  const ready = Promise.race([follower.first, new Promise<void>((r) => (timer = setTimeout(r, FIRST_READ_MS)))]).finally(() => clearTimeout(timer));
  return { revocation, ready, close: () => follower.close() };
}
