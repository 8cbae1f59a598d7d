import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { tlsOptions } from './redis.ts';
import type { HostPort, RedisTarget } from './redis-target.ts';

// Every server of a topology, for what Redis does not replicate and a restart loses: ACL users
// (node-redis-users.ts) and the script cache (script-preload.ts). Those are applied on each server
// by itself, not through the client the rest of the process uses: the one server; the Sentinel
// primary and each replica the sentinels know; every master and replica of a Cluster. And the
// moments the topology changes, when they must be applied again: a failover (+switch-master), a
// replica that comes back or is attached (+slave, -sdown, +convert-to-slave), a Cluster node that
// joins ioredis' pool (+node). Each connection here is short-lived and never retried by itself: a
// command that fails leaves it closed, and the next use opens a new one.

export interface Server {
  /** host:port (never a URL: it may hold a password). */
  address: string;
  redis: Redis;
  /** Sentinel said it is down: not tried, counted as failed. */
  down?: string;
}

export interface RedisServersOptions {
  /** Where Redis is, with the credentials of the process that applies things everywhere. */
  target: RedisTarget;
  /** Deadline of every connect and command, per server (default 2000 ms). */
  timeoutMs?: number;
  /**
   * Cluster: how often the slot map is read again (default 10 s). ioredis reads it only on a
   * MOVED or an error unless told to, and a replica that joins causes neither: without this it
   * would never be in the pool.
   */
  clusterRefreshMs?: number;
  /** CLIENT SETNAME of these connections. */
  connectionName: string;
}

const scrub = (msg: string): string => msg.replace(/[0-9a-fA-F]{64}/g, '<hash>');
/** An error's text with every 64-hex string (a password's hash) taken out. */
export const errText = (err: unknown): string => scrub(err instanceof Error ? err.message : String(err));
const hostPort = (h: HostPort): string => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;

/** Sentinel's reply for one replica: a flat [field, value, ...] list. */
function fields(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(flat)) for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

export class RedisServers {
  readonly #o: Required<RedisServersOptions>;
  /** Connections to single servers (a single target, a Sentinel's primary/replicas, sentinels), by address. */
  readonly #pool = new Map<string, Redis>();
  #cluster: Cluster | undefined;
  #watchers: Redis[] = [];
  readonly #listeners: ((why: string) => void)[] = [];
  #closed = false;

  constructor(o: RedisServersOptions) {
    this.#o = { timeoutMs: 2_000, clusterRefreshMs: 10_000, ...o };
  }

  get timeoutMs(): number {
    return this.#o.timeoutMs;
  }

  /**
   * Calls `listener` with the event's name on every topology change (Sentinel's events from every
   * sentinel, a Cluster node joining). A burst calls it many times: the caller gathers them.
   */
  onChange(listener: (why: string) => void): void {
    if (this.#closed) return;
    this.#listeners.push(listener);
    if (this.#listeners.length > 1) return;
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
          this.#emit(channel);
        });
        this.#watchers.push(sub);
      }
    } else if (t.kind === 'cluster') {
      // The client's '+node' listener (#clusterClient) tells the listeners; connect it now.
      void this.#clusterClient().catch(() => {});
    }
  }

  #emit(why: string): void {
    if (this.#closed) return;
    for (const l of this.#listeners) l(why);
  }

  /** Every server of the topology now, and the primary (where a registry is written). */
  async servers(): Promise<{ primary: Redis | Cluster; all: Server[] }> {
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
        return { primary: redis, all: [{ address, redis }] };
      }
      case 'sentinel': {
        const { primary, replicas } = await this.#askSentinels(t);
        const server = (h: HostPort, down?: string): Server => ({
          address: hostPort(h),
          redis: this.#pooled(hostPort(h), () => new Redis({ ...this.#serverOptions(), host: h.host, port: h.port })),
          ...(down ? { down } : {}),
        });
        const p = server(primary);
        // Mid-failover a sentinel may still list the promoted replica among the replicas (of itself):
        // each server once, the primary first.
        const seen = new Set([p.address]);
        const others = replicas.filter((r) => !seen.has(hostPort(r)) && seen.add(hostPort(r))).map((r) => server(r, r.down));
        return { primary: p.redis, all: [p, ...others] };
      }
      case 'cluster': {
        const c = await this.#clusterClient();
        // The slot map as it is now, not as it was at the last refresh (a node that joined since).
        await this.withTimeout(
          c,
          'the Cluster slot map',
          () => new Promise<void>((resolve, reject) => c.refreshSlotsCache((err) => (err ? reject(err) : resolve()))),
        );
        const all = c.nodes('all').map((redis) => ({ address: `${redis.options.host ?? '?'}:${redis.options.port ?? '?'}`, redis }));
        return { primary: c, all };
      }
      default:
        return t satisfies never;
    }
  }

  async #askSentinels(t: Extract<RedisTarget, { kind: 'sentinel' }>): Promise<{ primary: HostPort; replicas: (HostPort & { down?: string })[] }> {
    const errors: string[] = [];
    for (const s of t.sentinels) {
      const sentinel = this.#pooled(`sentinel ${hostPort(s)}`, () => new Redis(this.#sentinelOptions(s)));
      try {
        const answer = await this.withTimeout(sentinel, `sentinel ${hostPort(s)}`, async () => {
          const addr = (await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', t.name)) as [string, string] | null;
          if (!addr) throw new Error(`does not know ${t.name}`);
          const replicas = ((await sentinel.call('SENTINEL', 'REPLICAS', t.name)) as unknown[])
            .map(fields)
            .map((r) => {
              const flags = (r['flags'] ?? '').split(',');
              const down = flags.find((f) => ['s_down', 'o_down', 'disconnected'].includes(f));
              return { host: r['ip'] ?? '', port: Number(r['port']), ...(down ? { down: `sentinel ${hostPort(s)} says ${down}` } : {}) };
            })
            .filter((r) => r.host !== '' && Number.isInteger(r.port) && r.port > 0);
          return { primary: { host: addr[0], port: Number(addr[1]) }, replicas };
        });
        // A sentinel that has not heard of a failover yet names the old primary, now a replica
        // (its registry writes would fail READONLY) or gone: ask the next one.
        const primary = this.#pooled(
          hostPort(answer.primary),
          () => new Redis({ ...this.#serverOptions(), host: answer.primary.host, port: answer.primary.port }),
        );
        const info = await this.withTimeout(primary, hostPort(answer.primary), () => primary.info('replication'));
        if (!/^role:master\r?$/m.test(info)) throw new Error(`names ${hostPort(answer.primary)}, which is not a primary`);
        return answer;
      } catch (err) {
        errors.push(`sentinel ${hostPort(s)}: ${errText(err)}`);
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
      // A server joined ioredis' pool (a new node, a replica announced late).
      c.on('+node', () => this.#emit('+node'));
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
      connectionName: this.#o.connectionName,
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
  async withTimeout<T>(redis: Redis | Cluster, name: string, f: () => Promise<T>): Promise<T> {
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
      // Only a connection of this pool: a Cluster's node connections are ioredis' to manage.
      if (redis instanceof Redis && redis.status !== 'ready' && [...this.#pool.values()].includes(redis)) redis.disconnect();
      const msg = errText(err);
      throw new Error(msg.startsWith(name) ? msg : `${name}: ${msg}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes every connection; no listener is called after this. */
  close(): void {
    this.#closed = true;
    for (const w of this.#watchers) w.disconnect();
    for (const r of this.#pool.values()) r.disconnect();
    this.#pool.clear();
    this.#cluster?.disconnect();
  }
}
