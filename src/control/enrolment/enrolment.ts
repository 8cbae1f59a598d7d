import { createHash } from 'node:crypto';
import { CLUSTER_QUEUE, nodeQueueName } from '../../core/catalogue/queues.ts';
import type { GenerationTable } from '../../core/trust/key-generations.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import { RUNS_WORK_OF, type EnrolAnswer, type EnrolRequest } from '../../core/trust/enrolment-wire.ts';
import { nodeRedisPassword, queueKeys } from './node-credentials.ts';
import type { Identity, TokenIdentities } from './token-identity.ts';

// Enrolment: a queue's consumer proves who it is (TokenIdentities) and gets the work keys of its
// own queue, derived from the issuers' roots the receiver holds, and, when the receiver manages
// per-node Redis users, its node's user. A node's agent gets its own node's only, whatever node
// it asks for: the node is the token's, and a request naming another one is refused. Only for a
// Node the API server has now, at that node's credential generation
// (src/core/trust/key-generations.ts): a deleted or revoked node's earlier keys and password are
// never handed out again.

/** The port to per-node Redis users (src/adapters/redis/node-redis-users.ts). */
export interface NodeRedisUserPort {
  userName(node: string): string;
  /** Creates or updates the node's user on every server; resolves once the primary has it. */
  ensure(node: string, passwordSha256Hex: string): Promise<void>;
  /** Deletes it everywhere (and so its connections). */
  remove(node: string): Promise<void>;
}

/** Where the receiver records the queues it knows (the fleet view's registry, which agents may not write). */
export interface QueueRegistryPort {
  record(queue: string): Promise<void>;
}

/** The Nodes the API server has now. */
export interface NodeDirectory {
  /** The Node's uid; undefined when there is no such Node. */
  uidOf(node: string): Promise<string | undefined>;
}

/** Each node's credential generation (src/adapters/redis/node-generations.ts). */
export interface CredentialGenerations {
  /** The generation to hand out to the Node with `uid`, raised first when another Node of that name held it. */
  atEnrolment(node: string, uid: string): Promise<number>;
  current(node: string): Promise<number>;
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
  readonly #nodes: NodeDirectory;
  readonly #generations: CredentialGenerations;
  readonly #table: GenerationTable | undefined;
  /** Queues recorded by this process: a renewal does not write again. Only queues of identities TokenReview proved: the fleet's nodes. */
  readonly #recorded = new Set<string>();

  constructor(o: {
    roots: Keyring;
    identities: TokenIdentities;
    nodes: NodeDirectory;
    generations: CredentialGenerations;
    /** This process's generations (the roots' ring.generations): raised at once when enrolment finds a higher one. */
    table?: GenerationTable;
    redisUsers?: NodeRedisUserPort;
    registry?: QueueRegistryPort;
    renewAfterSeconds?: number;
  }) {
    this.#nodes = o.nodes;
    this.#generations = o.generations;
    this.#table = o.table;
    this.#registry = o.registry;
    this.#roots = o.roots;
    this.#identities = o.identities;
    this.#redisUsers = o.redisUsers;
    this.#renewAfterSeconds = o.renewAfterSeconds ?? RENEW_AFTER_SECONDS;
  }

  get identities(): TokenIdentities {
    return this.#identities;
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
    let generation = 0;
    if (id.as === 'node-agent') {
      const live = await this.#liveNode(id);
      if (!live.ok) return live;
      generation = await this.#generations.atEnrolment(id.node, live.uid);
      this.#table?.raise(nodeQueueName(id.node), generation);
    }
    const queue = id.as === 'node-agent' ? nodeQueueName(id.node) : CLUSTER_QUEUE;
    const keys = queueKeys(this.#roots, RUNS_WORK_OF[id.as], queue, generation);
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
    const node = id.as === 'node-agent' ? id.node : undefined;
    const redis = node ? await this.#redisUser(node, generation) : undefined;
    if (redis === 'revoked') return { ok: false, status: 503, error: `node ${node}'s credentials were revoked while it enrolled: enrol again` };
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

  /** The agent's Node as the API server has it now, and the token issued on it; else refused (and the token's identity forgotten). */
  async #liveNode(id: Extract<Identity, { as: 'node-agent' }>): Promise<{ ok: true; uid: string } | { ok: false; status: 403; error: string }> {
    const uid = await this.#nodes.uidOf(id.node);
    if (uid === undefined) {
      this.#identities.forgetNode(id.node);
      return { ok: false, status: 403, error: `node ${id.node} is not known to the API server: no credentials for a node that does not exist` };
    }
    if (id.nodeUid !== undefined && id.nodeUid !== uid) {
      this.#identities.forgetNode(id.node);
      return { ok: false, status: 403, error: `the token was issued on an earlier Node named ${id.node} (uid ${id.nodeUid}), not the one there now` };
    }
    return { ok: true, uid };
  }

  /**
   * The node's Redis user and password at `generation` (node-credentials.ts). A revoke that raised
   * the generation while this enrolment made the user would leave the older password in Redis:
   * the generation is read again after the user is made, and the user deleted if it moved.
   */
  async #redisUser(node: string, generation: number): Promise<EnrolAnswer['redis'] | 'revoked'> {
    const users = this.#redisUsers;
    const root = this.#roots.signing?.role === 'receiver' ? this.#roots.signing : undefined;
    if (!users || !root) return undefined;
    const password = nodeRedisPassword(root.key, node, generation);
    await users.ensure(node, createHash('sha256').update(password).digest('hex'));
    if ((await this.#generations.current(node)) !== generation) {
      await users.remove(node);
      return 'revoked';
    }
    return { username: users.userName(node), password };
  }
}
