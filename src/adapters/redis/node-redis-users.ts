import { MicroBatcher } from '../../core/collections/micro-batcher.ts';
import { checkedNode, isAclPrefix, isPasswordSha256, nodeUserRules, type NodeUserChange } from './node-user-acl.ts';
import { type ApplyReport, NodeUserServers } from './node-user-servers.ts';
import { watchNodeUsers } from './node-users-watch.ts';
import { errText, RedisServers } from './redis-servers.ts';
import type { RedisTarget } from './redis-target.ts';

// One Redis ACL user per node (a compromised node stays one node): node A's password
// opens A's queue and the keys every worker writes, never B's queue. The receiver applies these
// users when a node agent enrols and deletes them when the Node is deleted.
//
// Redis does not replicate ACLs: ACL SETUSER is neither propagated to replicas nor across Cluster
// nodes, and a restarted server has only its ACL file. So every user is applied on EVERY server of
// the topology (redis-servers.ts: the one server; the Sentinel primary and each replica the
// sentinels know; every master and replica of a Cluster), and a registry of the managed users
// (node -> SHA-256 of the password, never the password) lives in Redis on the primary, replicated
// with the data, so any receiver can apply them again: after a failover (+switch-master), when a
// replica comes back or is attached (+slave, -sdown), when a Cluster node appears (+node), and
// every `reconcileMs` anyway (a server that restarted lost them; one that was down missed a removal).
//
// Enrolment of a whole fleet (10,000 nodes after a mass reboot) calls ensure() thousands of times a
// second: calls are coalesced into one batch every `batchMs`, one pipeline per server per batch
// (bench/README.md has the figures).
//
// Never logged, never in an error: passwords and their hashes (Redis' error for a bad modifier
// echoes the modifier; errors are scrubbed of 64-hex strings before they leave this module).
//
// This file is the when: batching, the order of changes and syncs, the watch's lifetime. The rules
// are node-user-acl.ts (pure), the servers and the registry node-user-servers.ts, the watch
// node-users-watch.ts.

/**
 * Where Redis is (its username/password must hold the receiver's +acl|setuser, +acl|deluser,
 * +acl|users rights): a target, or the servers of one, shared with the script preload
 * (script-preload.ts: one set of connections and topology watches for both, closed by their owner).
 */
export type NodeRedisUsersOptions = NodeRedisUsersSettings & ({ target: RedisTarget; servers?: undefined } | { servers: RedisServers; target?: undefined });

interface NodeRedisUsersSettings {
  prefix: string;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  /** Deadline of every connect and command, per server (default 2000 ms; with `target` only). */
  timeoutMs?: number;
  /** How long ensure()/remove() calls are gathered into one batch (default 5 ms). */
  batchMs?: number;
  /** The most changes in one batch (default 2000); more start the next batch at once. */
  maxBatch?: number;
  /** Period of the safety-net reconcile started by watch() (default 60 s). */
  reconcileMs?: number;
  /** Delay that gathers a burst of topology events into one reapplyAll() (default 500 ms). */
  settleMs?: number;
  /** Cluster: how often the slot map is read again (default 10 s, RedisServersOptions; with `target` only). */
  clusterRefreshMs?: number;
}

interface Change extends NodeUserChange {
  resolve(r: ApplyReport): void;
  reject(err: Error): void;
}

export class NodeRedisUsers {
  readonly #o: Required<Omit<NodeRedisUsersSettings, 'prefix' | 'log'>> & NodeRedisUsersSettings;
  readonly #topology: RedisServers;
  /** #topology is this object's own (closed with it). */
  readonly #ownsTopology: boolean;
  readonly #servers: NodeUserServers;
  readonly #batcher: MicroBatcher<Change>;
  /** The batches and syncs, one at a time, in order: a remove after an ensure of the same node stays after it. */
  #serialized: Promise<void> = Promise.resolve();
  #watch: { stop(): void } | undefined;
  #closed = false;

  constructor(o: NodeRedisUsersOptions) {
    if (!isAclPrefix(o.prefix)) throw new Error(`QUEUE_PREFIX "${o.prefix}" cannot be an ACL key pattern`);
    this.#o = { timeoutMs: 2_000, batchMs: 5, maxBatch: 2_000, reconcileMs: 60_000, settleMs: 500, clusterRefreshMs: 10_000, ...o };
    this.#ownsTopology = o.servers === undefined;
    this.#topology =
      o.servers ??
      new RedisServers({
        target: o.target,
        timeoutMs: this.#o.timeoutMs,
        clusterRefreshMs: this.#o.clusterRefreshMs,
        connectionName: 'volume-medic:receiver:node-redis-users',
      });
    this.#servers = new NodeUserServers(this.#topology, { prefix: o.prefix, log: o.log, maxBatch: this.#o.maxBatch });
    this.#batcher = new MicroBatcher<Change>({
      gatherMs: this.#o.batchMs,
      maxBatch: this.#o.maxBatch,
      send: (batch) => this.#serial(() => this.#apply(batch)),
      onError: (batch, err) => {
        const e = new Error(`node Redis users: ${errText(err)}`);
        for (const c of batch) c.reject(e);
      },
    });
  }

  /** Creates or redefines `node`'s user on every server, and records it in the registry. */
  ensure(node: string, passwordSha256Hex: string): Promise<ApplyReport> {
    try {
      nodeUserRules(this.#o.prefix, node, passwordSha256Hex); // refuse bad input now, not in a batch
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.#enqueue(node, passwordSha256Hex);
  }

  /** Deletes `node`'s user on every server (its connections are closed by Redis) and from the registry. */
  remove(node: string): Promise<ApplyReport> {
    try {
      checkedNode(node);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.#enqueue(node, undefined);
  }

  #enqueue(node: string, sha: string | undefined): Promise<ApplyReport> {
    if (this.#closed) return Promise.reject(new Error('NodeRedisUsers is closed'));
    return new Promise((resolve, reject) => this.#batcher.add({ node, ...(sha ? { sha } : {}), resolve, reject }));
  }

  async #apply(batch: Change[]): Promise<void> {
    const servers = await this.#servers.servers();
    // The registry first: a change it holds is applied by any later reconcile, even if this
    // receiver dies before the servers have it.
    await this.#servers.writeRegistry(servers.registry, batch);
    const restricted = await this.#servers.restricted(servers.registry);
    for (const c of batch) if (c.sha && restricted.has(c.node)) c.readOnly = true;
    const perServer = await this.#servers.applyEverywhere(servers.all, batch);
    for (const c of batch) c.resolve({ applied: [...perServer.applied], failed: perServer.failed.map((f) => ({ ...f })) });
  }

  /**
   * Applies every registered user on every server and deletes the managed users the registry no
   * longer has (a server that was away when a node was removed). After a failover, a restart, a
   * new replica.
   */
  reapplyAll(): Promise<ApplyReport> {
    return this.#serial(() => this.#servers.syncAll(true));
  }

  /**
   * The cheap check (the periodic safety net): each server's user names against the registry;
   * only the missing users are applied and the extra ones deleted, except on a server that missed
   * a change before (every user is applied there again: it may hold an old password).
   */
  reconcile(): Promise<ApplyReport> {
    return this.#serial(() => this.#servers.syncAll(false));
  }

  /**
   * Runs `f` after the batches and syncs already started, alone: a sync that read the registry
   * before a remove() must not apply the removed user after that remove() deleted it.
   */
  #serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#serialized.then(f);
    this.#serialized = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * Applies `node`'s registered user again on every server, read-only if it is restricted now
   * (its connections closed). Undefined when the node has no user of its own.
   */
  async reapply(node: string): Promise<ApplyReport | undefined> {
    checkedNode(node);
    const servers = await this.#servers.servers();
    const sha = await this.#servers.registered(servers.registry, node);
    return sha && isPasswordSha256(sha) ? this.#enqueue(node, sha) : undefined;
  }

  /**
   * Re-applies after a topology change (Sentinel: +switch-master, +slave, -sdown from every
   * sentinel; Cluster: a node joining ioredis' pool), and reconciles every `reconcileMs`. The
   * first pass applies every user again: users an earlier release made are present, so the cheap
   * reconcile would keep their old rules (and the keys those rules still reach).
   */
  watch(): void {
    if (this.#closed || this.#watch) return;
    this.#watch = watchNodeUsers({
      onChange: (listener) => this.#topology.onChange(listener),
      reapplyAll: () => this.reapplyAll(),
      reconcile: () => this.reconcile(),
      log: this.#o.log,
      reconcileMs: this.#o.reconcileMs,
      settleMs: this.#o.settleMs,
    });
  }

  /** Waits for the batches already started (and sends those gathering), then closes every connection. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.stop();
    await this.#batcher.drain();
    await this.#serialized;
    if (this.#ownsTopology) this.#topology.close();
  }
}
