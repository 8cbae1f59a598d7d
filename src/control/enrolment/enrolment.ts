import { createHash, createHmac } from 'node:crypto';
import { CLUSTER_QUEUE, nodeQueueName } from '../../core/catalogue/queues.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import { workKeyOf } from '../../core/trust/work-keys.ts';
import { RUNS_WORK_OF, type EnrolAnswer, type EnrolRequest } from '../../core/trust/enrolment-wire.ts';
import type { Identity, TokenIdentities } from './token-identity.ts';

// Enrolment: a queue's consumer proves who it is (TokenIdentities) and gets the work keys of its
// own queue, derived from the issuers' roots the receiver holds, and, when the receiver manages
// per-node Redis users, its node's user. A node's agent gets its own node's only, whatever node
// it asks for: the node is the token's, and a request naming another one is refused.

/** The port to per-node Redis users (src/adapters/redis/node-redis-users.ts). */
export interface NodeRedisUserPort {
  userName(node: string): string;
  /** Creates or updates the node's user on every server; resolves once the primary has it. */
  ensure(node: string, passwordSha256Hex: string): Promise<void>;
}

/** Where the receiver records the queues it knows (the fleet view's registry, which agents may not write). */
export interface QueueRegistryPort {
  record(queue: string): Promise<void>;
}

export type EnrolOutcome = { ok: true; answer: EnrolAnswer; identity: Identity } | { ok: false; status: 401 | 403 | 503; error: string };

/** How often a consumer enrols again: picks up rotated roots and a re-created Redis user. */
const RENEW_AFTER_SECONDS = 1_800;

export class Enrolment {
  readonly #roots: Keyring;
  readonly #identities: TokenIdentities;
  readonly #redisUsers: NodeRedisUserPort | undefined;
  readonly #renewAfterSeconds: number;
  readonly #registry: QueueRegistryPort | undefined;
  /** Queues recorded by this process: a renewal does not write again. Only queues of identities TokenReview proved: the fleet's nodes. */
  readonly #recorded = new Set<string>();

  constructor(o: {
    roots: Keyring;
    identities: TokenIdentities;
    redisUsers?: NodeRedisUserPort;
    registry?: QueueRegistryPort;
    renewAfterSeconds?: number;
  }) {
    this.#registry = o.registry;
    this.#roots = o.roots;
    this.#identities = o.identities;
    this.#redisUsers = o.redisUsers;
    this.#renewAfterSeconds = o.renewAfterSeconds ?? RENEW_AFTER_SECONDS;
  }

  /** Throws ReviewUnavailableError when the API server cannot be asked. */
  async enrol(token: string, req: EnrolRequest): Promise<EnrolOutcome> {
    const who = await this.#identities.identify(token);
    if (!who.ok) return who;
    const id = who.identity;
    if (id.as !== req.as) return { ok: false, status: 403, error: `the token belongs to a ${id.as}, not a ${req.as}` };
    if (id.as === 'node-agent' && req.node !== id.node)
      return {
        ok: false,
        status: 403,
        error: `the token's pod runs on node ${id.node}, not ${req.node}: an agent enrols for its own node only`,
      };
    const queue = id.as === 'node-agent' ? nodeQueueName(id.node) : CLUSTER_QUEUE;
    const keys: Record<string, string> = {};
    for (const role of RUNS_WORK_OF[id.as]) {
      for (const [name, root] of this.#roots.verify) if (name.startsWith(`${role}.`)) keys[name] = workKeyOf(root, role, queue).toString('base64');
    }
    if (Object.keys(keys).length === 0)
      return { ok: false, status: 503, error: 'the receiver holds no issuer root to derive work keys from (SIGNING_KEYS_DIR)' };
    // A node agent seals its own checks' work with its node-agent key of the greatest id.
    const signing =
      id.as === 'node-agent'
        ? Object.keys(keys)
            .filter((n) => n.startsWith('node-agent.'))
            .sort()
            .at(-1)
        : undefined;
    const redis = id.as === 'node-agent' ? await this.#redisUser(id.node) : undefined;
    // The fleet view knows a node from its agent's enrolment, even before any job for it.
    if (this.#registry && !this.#recorded.has(queue)) {
      await this.#registry.record(queue);
      this.#recorded.add(queue);
    }
    return {
      ok: true,
      identity: id,
      answer: { queue, keys, ...(signing ? { signing } : {}), ...(redis ? { redis } : {}), renewAfterSeconds: this.#renewAfterSeconds },
    };
  }

  /**
   * The node's Redis user and password. The password is derived from the receiver's own root, so
   * every replica hands out the same one and can apply the user again (after a failover) without
   * storing it; Redis gets only its SHA-256. A rotated receiver root changes every password.
   */
  async #redisUser(node: string): Promise<EnrolAnswer['redis']> {
    const users = this.#redisUsers;
    const root = this.#roots.signing?.role === 'receiver' ? this.#roots.signing : undefined;
    if (!users || !root) return undefined;
    const password = createHmac('sha256', root.key).update(`volume-medic/redis/v1\0${node}`, 'utf8').digest('base64url');
    await users.ensure(node, createHash('sha256').update(password).digest('hex'));
    return { username: users.userName(node), password };
  }
}
