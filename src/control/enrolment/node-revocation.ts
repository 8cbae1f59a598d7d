import { nodeQueueName } from '../../core/catalogue/queues.ts';
import type { GenerationTable } from '../../core/trust/key-generations.ts';
import type { GenerationChange } from '../../adapters/redis/node-generations.ts';

// A node's credentials die: when its Node object is deleted (every receiver's Node watch) and when
// an operator revokes them (`volume-medic revoke <node>`, POST /v1/nodes/:node/revoke). Both raise
// the node's credential generation (src/core/trust/key-generations.ts), so its earlier work keys
// and Redis password are never derived, handed out or accepted again; then its Redis user is
// deleted on every server (Redis closes its connections) and the cached token identities of its
// pods are dropped. A revoked node's agent, still there, finds its connection refused, enrols
// again and gets the new generation's; a deleted Node's gets nothing (enrolment refuses a node the
// API server does not know). Work sealed before the raise is refused by the agent's new keys.
//
// The other replicas learn a raise within GENERATIONS_POLL_MS (src/adapters/redis/node-generations.ts)
// and drop their cached identities of the node then (raisedElsewhere).

export interface RevocationPorts {
  generations: { nodeDeleted(node: string, uid?: string): Promise<GenerationChange>; revoke(node: string): Promise<GenerationChange> };
  /** This replica's generations: raised at once, without waiting for its next poll. */
  table: GenerationTable;
  /** Per-node Redis users (REDIS_NODE_USERS); absent: the node agents share one user, which no revoke can take back. */
  users?: { remove(node: string): Promise<{ applied: string[]; failed: { server: string; error: string }[] }> };
  identities?: { forgetNode(node: string): number };
  audit(action: string, target: string, asked: { by: string; why?: string }): Promise<void>;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
}

export interface Revoked {
  node: string;
  /** The generation the node's credentials are now derived at. */
  generation: number;
  /** False: nothing was handed out since the last revoke (a repeated revoke changes nothing). */
  raised: boolean;
  /** What happened to its Redis user. */
  redisUser: 'removed' | 'not removed on every server' | 'shared (REDIS_NODE_USERS is off)';
  /** Cached token identities of its pods dropped on this replica. */
  identitiesDropped: number;
}

export class NodeRevocation {
  readonly #p: RevocationPorts;

  constructor(ports: RevocationPorts) {
    this.#p = ports;
  }

  /** An operator's revoke: idempotent (a repeat before the node enrols again raises nothing), audited under the operator's name. */
  async revoke(node: string, asked: { by: string; why?: string }): Promise<Revoked> {
    const change = await this.#p.generations.revoke(node);
    const out = await this.#cut(node, change.generation);
    await this.#p.audit('node-revoke', `node/${node}`, {
      by: asked.by,
      why: `${asked.why ?? ''}${asked.why ? ' ' : ''}(${change.raised ? `credentials now of generation ${change.generation}` : `already revoked: generation ${change.generation}, nothing handed out since`})`,
    });
    this.#p.log.info({ node, generation: change.generation, raised: change.raised, by: asked.by, redisUser: out.redisUser }, "node's credentials revoked");
    return { node, generation: change.generation, raised: change.raised, ...out };
  }

  /** The Node (with `uid`, from the watch) is gone: its credentials go with it. */
  async nodeDeleted(node: string, uid?: string): Promise<void> {
    const change = await this.#p.generations.nodeDeleted(node, uid);
    const out = await this.#cut(node, change.generation);
    this.#p.log.info({ node, generation: change.generation, raised: change.raised, redisUser: out.redisUser }, 'Node deleted: its credentials revoked');
  }

  /** Another replica raised `node`'s generation (its poll saw it): drop what this one cached of it. */
  raisedElsewhere(node: string): void {
    this.#p.identities?.forgetNode(node);
  }

  async #cut(node: string, generation: number): Promise<Pick<Revoked, 'redisUser' | 'identitiesDropped'>> {
    this.#p.table.raise(nodeQueueName(node), generation);
    const identitiesDropped = this.#p.identities?.forgetNode(node) ?? 0;
    if (!this.#p.users) return { redisUser: 'shared (REDIS_NODE_USERS is off)', identitiesDropped };
    const r = await this.#p.users.remove(node);
    if (r.failed.length > 0)
      this.#p.log.warn({ node, failed: r.failed }, "a Redis server still has a revoked node's user; the reconcile deletes it when the server answers");
    return { redisUser: r.failed.length === 0 ? 'removed' : 'not removed on every server', identitiesDropped };
  }
}
