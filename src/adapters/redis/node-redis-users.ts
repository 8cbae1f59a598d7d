import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { isNodeName } from '../../core/catalogue/names.ts';
import { nodeQueueName } from '../../core/catalogue/queues.ts';
import { nodeRestrictionsKey, readOnlyRules } from '../../core/redis-budget/restriction.ts';
import { tlsOptions } from './redis.ts';
import type { HostPort, RedisTarget } from './redis-target.ts';

// One Redis ACL user per node (a compromised node stays one node): node A's password
// opens A's queue and the keys every worker writes, never B's queue. The receiver applies these
// users when a node agent enrols and deletes them when the Node is deleted.
//
// Redis does not replicate ACLs: ACL SETUSER is neither propagated to replicas nor across Cluster
// nodes, and a restarted server has only its ACL file. So every user is applied on EVERY server of
// the topology (the one server; the Sentinel primary and each replica the sentinels know; every
// master and replica of a Cluster), and a registry of the managed users (node -> SHA-256 of the
// password, never the password) lives in Redis on the primary, replicated with the data, so any
// receiver can apply them again: after a failover (+switch-master), when a replica comes back or is
// attached (+slave, -sdown), when a Cluster node appears (+node), and every `reconcileMs` anyway
// (a server that restarted lost them; one that was down missed a removal).
//
// Enrolment of a whole fleet (10,000 nodes after a mass reboot) calls ensure() thousands of times a
// second: calls are coalesced into one batch every `batchMs`, one pipeline per server per batch
// (bench/README.md has the figures).
//
// Never logged, never in an error: passwords and their hashes (Redis' error for a bad modifier
// echoes the modifier; errors are scrubbed of 64-hex strings before they leave this module).

/**
 * The commands of a node agent's user: exactly the shared `volume-medic-node-agent` user's of
 * deploy/charts/volume-medic/files/users.acl.template (test/unit/queues/node-redis-users.test.ts
 * holds the two equal), where that file explains each.
 */
export const NODE_AGENT_COMMANDS: readonly string[] = [
  'ping',
  'quit',
  'info',
  'client|setname',
  'eval',
  'evalsha',
  'multi',
  'exec',
  'discard',
  'scan',
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

export interface NodeRedisUsersOptions {
  /** Where Redis is; its username/password must hold the receiver's +acl|setuser, +acl|deluser, +acl|users rights. */
  target: RedisTarget;
  prefix: string;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  /** Deadline of every connect and command, per server (default 2000 ms). */
  timeoutMs?: number;
  /** How long ensure()/remove() calls are gathered into one batch (default 5 ms). */
  batchMs?: number;
  /** The most changes in one batch (default 2000); more start the next batch at once. */
  maxBatch?: number;
  /** Period of the safety-net reconcile started by watch() (default 60 s). */
  reconcileMs?: number;
  /** Delay that gathers a burst of topology events into one reapplyAll() (default 500 ms). */
  settleMs?: number;
  /**
   * Cluster: how often the slot map is read again (default 10 s). ioredis reads it only on a
   * MOVED or an error unless told to, and a replica that joins causes neither: without this it
   * would never be in the pool, never get the users.
   */
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

interface Server {
  address: string;
  redis: Redis;
  /** Sentinel said it is down: not tried, counted as failed. */
  down?: string;
}

const scrub = (msg: string): string => msg.replace(/[0-9a-fA-F]{64}/g, '<hash>');
const errText = (err: unknown): string => scrub(err instanceof Error ? err.message : String(err));
const hp = (h: HostPort): string => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;

/** Sentinel's reply for one replica: a flat [field, value, ...] list. */
function fields(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(flat)) for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

export class NodeRedisUsers {
  readonly #o: Required<Omit<NodeRedisUsersOptions, 'target' | 'prefix' | 'log'>> & NodeRedisUsersOptions;
  /** Connections to single servers (a single target, a Sentinel's primary/replicas, sentinels), by address. */
  readonly #pool = new Map<string, Redis>();
  #cluster: Cluster | undefined;
  #pending: Change[] = [];
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  /** Servers that missed a change: the next reconcile applies every user there, not only the missing ones. */
  readonly #dirty = new Set<string>();
  #watchers: Redis[] = [];
  #reconcileTimer: NodeJS.Timeout | undefined;
  #settleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(o: NodeRedisUsersOptions) {
    if (!PREFIX.test(o.prefix)) throw new Error(`QUEUE_PREFIX "${o.prefix}" cannot be an ACL key pattern`);
    this.#o = { timeoutMs: 2_000, batchMs: 5, maxBatch: 2_000, reconcileMs: 60_000, settleMs: 500, clusterRefreshMs: 10_000, ...o };
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
    const t = this.#o.target;
    if (t.kind === 'sentinel') {
      for (const s of t.sentinels) {
        const sub = new Redis({ ...this.#sentinelOptions(s), retryStrategy: (n) => Math.min(n * 500, 5_000), maxRetriesPerRequest: null });
        sub.on('error', () => {});
        void sub.subscribe('+switch-master', '+slave', '-sdown', '+convert-to-slave').catch(() => {});
        sub.on('message', (channel: string, message: string) => {
          // Every event names the monitored primary: other primaries a sentinel watches are not ours.
          if (!message.includes(` ${t.name} `) && !message.startsWith(`${t.name} `)) return;
          if (channel === '-sdown' && !message.startsWith('slave ')) return;
          this.#settle(channel);
        });
        this.#watchers.push(sub);
      }
    } else if (t.kind === 'cluster') {
      // The client's '+node' listener (#clusterClient) acts once watching; connect it now.
      void this.#clusterClient().catch(() => {});
    }
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

  /** Every server of the topology now, and where the registry is written (the primary). */
  async #servers(): Promise<{ registry: Redis | Cluster; all: Server[] }> {
    const t = this.#o.target;
    switch (t.kind) {
      case 'single': {
        const redis = this.#pooled(`single ${t.url}`, () => new Redis(t.url, this.#serverOptions()));
        let address = 'the server';
        try {
          const u = new URL(t.url);
          address = u.host;
        } catch {
          // Named generically; never the URL (it may hold a password).
        }
        return { registry: redis, all: [{ address, redis }] };
      }
      case 'sentinel': {
        const { primary, replicas } = await this.#askSentinels(t);
        const server = (h: HostPort, down?: string): Server => ({
          address: hp(h),
          redis: this.#pooled(hp(h), () => new Redis({ ...this.#serverOptions(), host: h.host, port: h.port })),
          ...(down ? { down } : {}),
        });
        const p = server(primary);
        // Mid-failover a sentinel may still list the promoted replica among the replicas (of itself):
        // each server once, the primary first.
        const seen = new Set([p.address]);
        const others = replicas.filter((r) => !seen.has(hp(r)) && seen.add(hp(r))).map((r) => server(r, r.down));
        return { registry: p.redis, all: [p, ...others] };
      }
      case 'cluster': {
        const c = await this.#clusterClient();
        // The slot map as it is now, not as it was at the last refresh (a node that joined since).
        await this.#withTimeout(
          c,
          'the Cluster slot map',
          () => new Promise<void>((resolve, reject) => c.refreshSlotsCache((err) => (err ? reject(err) : resolve()))),
        );
        const all = c.nodes('all').map((redis) => ({ address: `${redis.options.host ?? '?'}:${redis.options.port ?? '?'}`, redis }));
        return { registry: c, all };
      }
      default:
        return t satisfies never;
    }
  }

  async #askSentinels(t: Extract<RedisTarget, { kind: 'sentinel' }>): Promise<{ primary: HostPort; replicas: (HostPort & { down?: string })[] }> {
    const errors: string[] = [];
    for (const s of t.sentinels) {
      const sentinel = this.#pooled(`sentinel ${hp(s)}`, () => new Redis(this.#sentinelOptions(s)));
      try {
        const answer = await this.#withTimeout(sentinel, `sentinel ${hp(s)}`, async () => {
          const addr = (await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', t.name)) as [string, string] | null;
          if (!addr) throw new Error(`does not know ${t.name}`);
          const replicas = ((await sentinel.call('SENTINEL', 'REPLICAS', t.name)) as unknown[])
            .map(fields)
            .map((r) => {
              const flags = (r['flags'] ?? '').split(',');
              const down = flags.find((f) => ['s_down', 'o_down', 'disconnected'].includes(f));
              return { host: r['ip'] ?? '', port: Number(r['port']), ...(down ? { down: `sentinel ${hp(s)} says ${down}` } : {}) };
            })
            .filter((r) => r.host !== '' && Number.isInteger(r.port) && r.port > 0);
          return { primary: { host: addr[0], port: Number(addr[1]) }, replicas };
        });
        // A sentinel that has not heard of a failover yet names the old primary, now a replica
        // (its registry writes would fail READONLY) or gone: ask the next one.
        const primary = this.#pooled(hp(answer.primary), () => new Redis({ ...this.#serverOptions(), host: answer.primary.host, port: answer.primary.port }));
        const info = await this.#withTimeout(primary, hp(answer.primary), () => primary.info('replication'));
        if (!/^role:master\r?$/m.test(info)) throw new Error(`names ${hp(answer.primary)}, which is not a primary`);
        return answer;
      } catch (err) {
        errors.push(`sentinel ${hp(s)}: ${errText(err)}`);
      }
    }
    throw new Error(`no sentinel said where ${t.name} is (${errors.join('; ')})`);
  }

  async #clusterClient(): Promise<Cluster> {
    const t = this.#o.target;
    if (t.kind !== 'cluster') throw new Error('not a cluster target');
    this.#cluster ??= (() => {
      const c = new Cluster(t.nodes, {
        enableOfflineQueue: true,
        enableReadyCheck: true,
        clusterRetryStrategy: (n) => Math.min(n * 500, 5_000),
        slotsRefreshInterval: this.#o.clusterRefreshMs,
        redisOptions: this.#serverOptions(),
      });
      c.on('error', () => {});
      // A server joined ioredis' pool (a new node, a replica announced late): apply every user there.
      c.on('+node', () => {
        if (this.#reconcileTimer) this.#settle('+node');
      });
      return c;
    })();
    const c = this.#cluster;
    if (c.status !== 'ready') {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          c.off('ready', onReady);
          reject(new Error(`the Cluster did not answer within ${this.#o.timeoutMs} ms`));
        }, this.#o.timeoutMs);
        const onReady = (): void => {
          clearTimeout(timer);
          resolve();
        };
        c.once('ready', onReady);
      });
    }
    return c;
  }

  #serverOptions(): RedisOptions {
    const t = this.#o.target;
    const tls = tlsOptions(t);
    return {
      ...(t.username ? { username: t.username } : {}),
      ...(t.password ? { password: t.password } : {}),
      ...(tls ? { tls } : {}),
      connectionName: 'volume-medic:receiver:node-redis-users',
      connectTimeout: this.#o.timeoutMs,
      commandTimeout: this.#o.timeoutMs,
      maxRetriesPerRequest: 0,
      // A dropped connection is not retried: it ends, and the next use makes a new one.
      retryStrategy: () => null,
      lazyConnect: true,
    };
  }

  #sentinelOptions(s: HostPort): RedisOptions {
    const t = this.#o.target;
    const tls = tlsOptions(t);
    return {
      host: s.host,
      port: s.port,
      ...(t.kind === 'sentinel' && t.sentinelPassword ? { password: t.sentinelPassword } : {}),
      ...(tls ? { tls } : {}),
      connectTimeout: this.#o.timeoutMs,
      commandTimeout: this.#o.timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
    };
  }

  #pooled(key: string, make: () => Redis): Redis {
    const have = this.#pool.get(key);
    if (have && have.status !== 'end' && have.status !== 'close') return have;
    have?.disconnect();
    const r = make();
    r.on('error', () => {});
    this.#pool.set(key, r);
    return r;
  }

  /** Runs `f` with a deadline (a connection that never comes up has no command timeout yet). */
  async #withTimeout<T>(redis: Redis | Cluster, name: string, f: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        (async () => {
          if (redis instanceof Redis && (redis.status === 'wait' || redis.status === 'end')) await redis.connect();
          return f();
        })(),
        new Promise<never>((_r, reject) => {
          timer = setTimeout(() => reject(new Error(`${name}: no answer within ${this.#o.timeoutMs * 2} ms`)), this.#o.timeoutMs * 2);
        }),
      ]);
    } catch (err) {
      // Only a connection of this module's pool: a Cluster's node connections are ioredis' to manage.
      if (redis instanceof Redis && redis.status !== 'ready' && [...this.#pool.values()].includes(redis)) redis.disconnect();
      const msg = errText(err);
      throw new Error(msg.startsWith(name) ? msg : `${name}: ${msg}`);
    } finally {
      clearTimeout(timer);
    }
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
    for (const w of this.#watchers) w.disconnect();
    for (const r of this.#pool.values()) r.disconnect();
    this.#pool.clear();
    this.#cluster?.disconnect();
  }
}

function checkPipeline(results: [Error | null, unknown][] | null): void {
  if (!results) throw new Error('the pipeline was not run (connection closed)');
  const firstError = results.find(([err]) => err)?.[0];
  if (firstError) throw firstError;
}
