import type { Cluster, Redis } from 'ioredis';
import { isNodeName } from '../../core/catalogue/names.ts';
import { nodeQueueName } from '../../core/catalogue/queues.ts';
import { nodeRestrictionsKey, readOnlyRules } from '../../core/redis-budget/restriction.ts';
import { errText, RedisServers, type Server } from './redis-servers.ts';
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

/**
 * The commands of a node agent's user: exactly the shared `volume-medic-node-agent` user's of
 * deploy/charts/volume-medic/files/users.acl.template (test/unit/adapters/redis/node-redis-users.test.ts
 * holds the two equal), where that file explains each.
 */
export const NODE_AGENT_COMMANDS: readonly string[] = [
  'ping',
  'quit',
  'info',
  'client|setname',
  // Not eval: a node runs the scripts the receiver loaded (src/adapters/redis/lua-script.ts).
  'evalsha',
  'multi',
  'exec',
  'discard',
  'get',
  'set',
  'incr',
  'del',
  'exists',
  'type',
  'rename',
  'pexpire',
  'pttl',
  'persist',
  'hset',
  'hsetnx',
  'hget',
  'hmget',
  'hmset',
  'hgetall',
  'hdel',
  'hincrby',
  'hlen',
  'hexists',
  'hscan',
  'lpush',
  'rpush',
  'lpop',
  'rpop',
  'lrange',
  'ltrim',
  'lrem',
  'llen',
  'lindex',
  'lset',
  'lpos',
  'rpoplpush',
  'sadd',
  'srem',
  'smembers',
  'scard',
  'sismember',
  'sscan',
  'zadd',
  'zrem',
  'zscore',
  'zcard',
  'zcount',
  'zrange',
  'zrevrange',
  'zrangebyscore',
  'zrevrangebyscore',
  'zremrangebyscore',
  'zremrangebyrank',
  'zpopmin',
  'xadd',
  'xtrim',
  'bzpopmin',
];

/**
 * Added to every per-node user (not in the template): ioredis' Cluster client asks a node for the
 * slot map (CLUSTER SLOTS) and checks CLUSTER INFO before it is ready, so without them a node
 * agent's user could not even connect to a Cluster. Both only read the topology; on a server
 * that is not in a Cluster they answer an error. The template's shared users lack them, which
 * is fine for the bundled single Redis it is written for.
 */
export const CLUSTER_DISCOVERY_COMMANDS: readonly string[] = ['cluster|slots', 'cluster|info'];

/**
 * The keys outside its own queue a node's own user may touch: read-only (%R~), the modes and
 * pauses. Its job statistics are its queue's own (src/adapters/stats/job-stats.ts queueStatsKey), and
 * the receiver takes its breaker slots (src/core/controls/breaker-wire.ts): a node's password can
 * neither lower the fleet's counts nor trip or clear a breaker.
 * Narrower than the template's shared node-agent user, which keeps the old shared approval,
 * parked and audit keys and the queue registry for agents not yet upgraded: an enrolled agent
 * writes its approval requests, parked jobs and audit entries under its own queue
 * (src/core/controls/redis-keys.ts queueControlKeys) and the receiver records its queue at enrolment.
 */
const nodeAgentSharedKeys = (prefix: string): string[] => [`%R~${prefix}:vm:ctl:modes`, `%R~${prefix}:vm:ctl:pause`];

// Every user this module manages starts with this. The '.' cannot be confused with the shared
// user `volume-medic-node-agent` (a node named `agent` is `volume-medic-node.agent`), and every
// character of a node name and of this prefix is unreserved in a URL's userinfo, so the name
// goes into REDIS_URL without percent-encoding (Redis itself only refuses spaces in user names).
const USER_PREFIX = 'volume-medic-node.';
const PREFIX = /^[A-Za-z0-9_-]{1,64}$/; // as QUEUE_PREFIX (scripts/deploy/redis-acl.ts)
const SHA256_HEX = /^[0-9a-f]{64}$/;

export const nodeUserName = (node: string): string => `${USER_PREFIX}${checkedNode(node)}`;

/** The node a managed user name stands for, or undefined for any other user. */
export const nodeOfUserName = (user: string): string | undefined =>
  user.startsWith(USER_PREFIX) && isNodeName(user.slice(USER_PREFIX.length)) ? user.slice(USER_PREFIX.length) : undefined;

/** The registry of managed users: node -> SHA-256 (hex) of its password. A hash on the primary. */
export const nodeUsersKey = (prefix: string): string => `${prefix}:vm:acl:nodes`;

function checkedNode(node: string): string {
  // A node name becomes part of a key pattern: a '*', '?' or '[' would widen it to other nodes,
  // a '}' would end the hash tag early. RFC 1123 subdomains hold none of them.
  if (!isNodeName(node)) throw new Error(`not a node name (RFC 1123 subdomain): ${JSON.stringify(node.slice(0, 80))}`);
  return node;
}

/**
 * The arguments of ACL SETUSER after the user name: a whole definition (`reset` first, so
 * applying it again, or over an older definition, leaves nothing of the old one), the password by
 * hash only, that node's queue (`~<prefix>:vm-node-{<node>}:*`; '{' and '}' are literal in Redis'
 * glob patterns, so it matches no other node's keys), the shared keys, no channels, and the
 * node agent's commands after -@all.
 */
export function nodeUserRules(prefix: string, node: string, passwordSha256Hex: string): string[] {
  if (!PREFIX.test(prefix)) throw new Error(`QUEUE_PREFIX "${prefix}" cannot be an ACL key pattern: letters, digits, _ and - only`);
  if (!SHA256_HEX.test(passwordSha256Hex)) throw new Error('the password hash must be 64 lowercase hex characters (SHA-256)');
  return [
    'reset',
    'on',
    `#${passwordSha256Hex}`,
    'resetchannels',
    `~${prefix}:${nodeQueueName(checkedNode(node))}:*`,
    ...nodeAgentSharedKeys(prefix),
    '-@all',
    ...[...NODE_AGENT_COMMANDS, ...CLUSTER_DISCOVERY_COMMANDS].map((c) => `+${c}`),
  ];
}

/** What one ensure()/remove()/reapplyAll() did: the servers it reached, and those it did not. */
export interface ApplyReport {
  /** host:port of every server the change was applied on. */
  applied: string[];
  /** Each server it was not applied on, and why (retried by the next reconcile). */
  failed: { server: string; error: string }[];
}

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

interface Change {
  node: string;
  /** undefined: remove. */
  sha?: string;
  /** Over its memory budget (src/core/redis-budget/restriction.ts): applied read-only, its connections closed. */
  readOnly?: boolean;
  resolve(r: ApplyReport): void;
  reject(err: Error): void;
}

export class NodeRedisUsers {
  readonly #o: Required<Omit<NodeRedisUsersSettings, 'prefix' | 'log'>> & NodeRedisUsersSettings;
  readonly #topology: RedisServers;
  /** #topology is this object's own (closed with it). */
  readonly #ownsTopology: boolean;
  #pending: Change[] = [];
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  /** Servers that missed a change: the next reconcile applies every user there, not only the missing ones. */
  readonly #dirty = new Set<string>();
  #reconcileTimer: NodeJS.Timeout | undefined;
  #settleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(o: NodeRedisUsersOptions) {
    if (!PREFIX.test(o.prefix)) throw new Error(`QUEUE_PREFIX "${o.prefix}" cannot be an ACL key pattern`);
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
  }

  #servers(): Promise<{ registry: Redis | Cluster; all: Server[] }> {
    return this.#topology.servers().then(({ primary, all }) => ({ registry: primary, all }));
  }

  #withTimeout<T>(redis: Redis | Cluster, name: string, f: () => Promise<T>): Promise<T> {
    return this.#topology.withTimeout(redis, name, f);
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
    return new Promise((resolve, reject) => {
      this.#pending.push({ node, ...(sha ? { sha } : {}), resolve, reject });
      if (this.#pending.length >= this.#o.maxBatch) this.#scheduleFlush(0);
      else this.#scheduleFlush(this.#o.batchMs);
    });
  }

  #scheduleFlush(ms: number): void {
    if (this.#flushTimer && ms > 0) return;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      // One batch at a time, in order: a remove after an ensure of the same node stays after it.
      this.#flushing = this.#flushing.then(() => this.#flush());
    }, ms);
  }

  async #flush(): Promise<void> {
    const batch = this.#pending.splice(0, this.#o.maxBatch);
    if (this.#pending.length > 0) this.#scheduleFlush(0);
    if (batch.length === 0) return;
    try {
      const servers = await this.#servers();
      // The registry first: a change it holds is applied by any later reconcile, even if this
      // receiver dies before the servers have it. Written on the primary (replicated from there).
      await this.#withTimeout(servers.registry, 'the registry', () => {
        const p = servers.registry.pipeline();
        for (const c of batch) {
          if (c.sha) p.hset(nodeUsersKey(this.#o.prefix), c.node, c.sha);
          else p.hdel(nodeUsersKey(this.#o.prefix), c.node);
        }
        return p.exec().then(checkPipeline);
      });
      const restricted = await this.#restricted(servers.registry);
      for (const c of batch) if (c.sha && restricted.has(c.node)) c.readOnly = true;
      const perServer = await this.#applyEverywhere(servers.all, batch);
      for (const c of batch) c.resolve({ applied: [...perServer.applied], failed: perServer.failed.map((f) => ({ ...f })) });
    } catch (err) {
      const e = new Error(`node Redis users: ${errText(err)}`);
      for (const c of batch) c.reject(e);
    }
  }

  /** One pipeline per server with every change of the batch; a server fails or succeeds as a whole. */
  async #applyEverywhere(servers: Server[], batch: readonly Pick<Change, 'node' | 'sha' | 'readOnly'>[]): Promise<ApplyReport> {
    const report: ApplyReport = { applied: [], failed: [] };
    await Promise.all(
      servers.map(async (s) => {
        if (s.down) {
          report.failed.push({ server: s.address, error: s.down });
          this.#dirty.add(s.address);
          return;
        }
        try {
          await this.#withTimeout(s.redis, s.address, async () => {
            const p = s.redis.pipeline();
            for (const c of batch) {
              if (c.sha && !c.readOnly) p.call('ACL', 'SETUSER', nodeUserName(c.node), ...nodeUserRules(this.#o.prefix, c.node, c.sha));
              else if (!c.sha) p.call('ACL', 'DELUSER', nodeUserName(c.node));
            }
            checkPipeline(await p.exec());
            // A restricted user is deleted (Redis closes its connections: a huge write still
            // arriving goes with its buffer) and made again read-only, at once: no WRONGPASS between.
            for (const c of batch)
              if (c.sha && c.readOnly)
                checkPipeline(
                  await s.redis
                    .multi()
                    .call('ACL', 'DELUSER', nodeUserName(c.node))
                    .call('ACL', 'SETUSER', nodeUserName(c.node), ...readOnlyRules(nodeUserRules(this.#o.prefix, c.node, c.sha)))
                    .exec(),
                );
          });
          report.applied.push(s.address);
        } catch (err) {
          report.failed.push({ server: s.address, error: errText(err) });
          this.#dirty.add(s.address);
        }
      }),
    );
    if (report.failed.length > 0)
      this.#o.log.warn({ failed: report.failed, changes: batch.length }, 'node Redis users not applied on every server (the reconcile retries)');
    return report;
  }

  /**
   * Applies every registered user on every server and deletes the managed users the registry no
   * longer has (a server that was away when a node was removed). After a failover, a restart, a
   * new replica.
   */
  reapplyAll(): Promise<ApplyReport> {
    return this.#serial(() => this.#reapplyAll());
  }

  async #reapplyAll(): Promise<ApplyReport> {
    const servers = await this.#servers();
    const registry = await this.#registry(servers.registry);
    const restricted = await this.#restricted(servers.registry);
    const report: ApplyReport = { applied: [], failed: [] };
    await Promise.all(
      servers.all.map(async (s) => {
        const r = await this.#syncServer(s, registry, restricted, true);
        report.applied.push(...r.applied);
        report.failed.push(...r.failed);
      }),
    );
    return report;
  }

  /**
   * The cheap check (the periodic safety net): each server's user names against the registry;
   * only the missing users are applied and the extra ones deleted, except on a server that missed
   * a change before (every user is applied there again: it may hold an old password).
   */
  reconcile(): Promise<ApplyReport> {
    return this.#serial(() => this.#reconcile());
  }

  async #reconcile(): Promise<ApplyReport> {
    const servers = await this.#servers();
    const registry = await this.#registry(servers.registry);
    const restricted = await this.#restricted(servers.registry);
    const report: ApplyReport = { applied: [], failed: [] };
    await Promise.all(
      servers.all.map(async (s) => {
        const r = await this.#syncServer(s, registry, restricted, this.#dirty.has(s.address));
        report.applied.push(...r.applied);
        report.failed.push(...r.failed);
      }),
    );
    return report;
  }

  /**
   * Runs `f` after the batches and syncs already started, alone: a sync that read the registry
   * before a remove() must not apply the removed user after that remove() deleted it.
   */
  #serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#flushing.then(f);
    this.#flushing = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** The nodes over their memory budget (src/core/redis-budget/restriction.ts): their users are applied read-only. */
  async #restricted(primary: Redis | Cluster): Promise<Set<string>> {
    return new Set(Object.keys(await this.#withTimeout(primary, 'the restrictions', () => primary.hgetall(nodeRestrictionsKey(this.#o.prefix)))));
  }

  /**
   * Applies `node`'s registered user again on every server, read-only if it is restricted now
   * (its connections closed). Undefined when the node has no user of its own.
   */
  async reapply(node: string): Promise<ApplyReport | undefined> {
    checkedNode(node);
    const servers = await this.#servers();
    const sha = await this.#withTimeout(servers.registry, 'the registry', () => servers.registry.hget(nodeUsersKey(this.#o.prefix), node));
    return sha && SHA256_HEX.test(sha) ? this.#enqueue(node, sha) : undefined;
  }

  async #registry(primary: Redis | Cluster): Promise<Map<string, string>> {
    const all = await this.#withTimeout(primary, 'the registry', () => primary.hgetall(nodeUsersKey(this.#o.prefix)));
    return new Map(Object.entries(all).filter(([node, sha]) => isNodeName(node) && SHA256_HEX.test(sha)));
  }

  async #syncServer(s: Server, registry: ReadonlyMap<string, string>, restricted: ReadonlySet<string>, full: boolean): Promise<ApplyReport> {
    if (s.down) {
      this.#dirty.add(s.address);
      return { applied: [], failed: [{ server: s.address, error: s.down }] };
    }
    try {
      const changes = await this.#withTimeout(s.redis, s.address, async () => {
        const users = (await s.redis.call('ACL', 'USERS')) as string[];
        const present = new Set(users.map(nodeOfUserName).filter((n): n is string => n !== undefined));
        const changes: Pick<Change, 'node' | 'sha' | 'readOnly'>[] = [];
        for (const [node, sha] of registry) if (full || !present.has(node)) changes.push({ node, sha, ...(restricted.has(node) ? { readOnly: true } : {}) });
        for (const node of present) if (!registry.has(node)) changes.push({ node });
        return changes;
      });
      if (changes.length === 0) {
        this.#dirty.delete(s.address);
        return { applied: [s.address], failed: [] };
      }
      // In slices: one server's pipeline holds at most maxBatch changes.
      for (let i = 0; i < changes.length; i += this.#o.maxBatch) {
        const r = await this.#applyEverywhere([s], changes.slice(i, i + this.#o.maxBatch));
        if (r.failed.length > 0) return r;
      }
      this.#dirty.delete(s.address);
      if (!full || changes.length > 0)
        this.#o.log.info({ server: s.address, changes: changes.length, full }, 'node Redis users brought in line with the registry');
      return { applied: [s.address], failed: [] };
    } catch (err) {
      this.#dirty.add(s.address);
      return { applied: [], failed: [{ server: s.address, error: errText(err) }] };
    }
  }

  /**
   * Re-applies after a topology change (Sentinel: +switch-master, +slave, -sdown from every
   * sentinel; Cluster: a node joining ioredis' pool), and reconciles every `reconcileMs`. The
   * first pass applies every user again: users an earlier release made are present, so the cheap
   * reconcile would keep their old rules (and the keys those rules still reach).
   */
  watch(): void {
    if (this.#closed || this.#reconcileTimer) return;
    this.#settle("watch started: every user gets this release's rules");
    this.#topology.onChange((why) => this.#settle(why));
    const tick = (): void => {
      this.#reconcileTimer = setTimeout(() => {
        this.reconcile()
          .then(
            (r) => {
              if (r.failed.length > 0) this.#o.log.warn({ failed: r.failed }, 'node Redis users: reconcile did not reach every server');
            },
            (err: unknown) => this.#o.log.warn({ error: errText(err) }, 'node Redis users: reconcile failed'),
          )
          .finally(() => {
            if (!this.#closed) tick();
          });
      }, this.#o.reconcileMs);
    };
    tick();
  }

  #settle(why: string): void {
    if (this.#closed || this.#settleTimer) return;
    this.#settleTimer = setTimeout(() => {
      this.#settleTimer = undefined;
      this.reapplyAll().then(
        (r) => this.#o.log.info({ why, applied: r.applied.length, failed: r.failed }, 'node Redis users applied again after a topology change'),
        (err: unknown) => this.#o.log.warn({ why, error: errText(err) }, 'node Redis users: applying again after a topology change failed'),
      );
    }, this.#o.settleMs);
  }

  /** Waits for the batches already started, then closes every connection. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reconcileTimer);
    clearTimeout(this.#settleTimer);
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
      this.#flushing = this.#flushing.then(() => this.#flush());
    }
    await this.#flushing;
    if (this.#ownsTopology) this.#topology.close();
  }
}

function checkPipeline(results: [Error | null, unknown][] | null): void {
  if (!results) throw new Error('the pipeline was not run (connection closed)');
  const firstError = results.find(([err]) => err)?.[0];
  if (firstError) throw firstError;
}
