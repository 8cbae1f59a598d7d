import type { Cluster, Redis } from 'ioredis';
import { nodeRestrictionsKey } from '../../core/redis-budget/restriction.ts';
import { aclCommands, nodeUsersKey, registryOf, serverChanges, type NodeUserChange } from './node-user-acl.ts';
import { errText, type RedisServers, type Server } from './redis-servers.ts';

// The per-node users on the servers of the topology (redis-servers.ts): the registry on the
// primary, and the ACL changes on every server, one pipeline per server per batch. Which changes
// and which commands is node-user-acl.ts's; when, node-redis-users.ts's.

/** What one ensure()/remove()/reapplyAll() did: the servers it reached, and those it did not. */
export interface ApplyReport {
  /** host:port of every server the change was applied on. */
  applied: string[];
  /** Each server it was not applied on, and why (retried by the next reconcile). */
  failed: { server: string; error: string }[];
}

type Log = { info(o: object, msg: string): void; warn(o: object, msg: string): void };

export class NodeUserServers {
  readonly #topology: RedisServers;
  readonly #prefix: string;
  readonly #log: Log;
  readonly #maxBatch: number;
  /** Servers that missed a change: the next reconcile applies every user there, not only the missing ones. */
  readonly #dirty = new Set<string>();

  constructor(topology: RedisServers, o: { prefix: string; log: Log; maxBatch: number }) {
    this.#topology = topology;
    this.#prefix = o.prefix;
    this.#log = o.log;
    this.#maxBatch = o.maxBatch;
  }

  servers(): Promise<{ registry: Redis | Cluster; all: Server[] }> {
    return this.#topology.servers().then(({ primary, all }) => ({ registry: primary, all }));
  }

  #withTimeout<T>(redis: Redis | Cluster, name: string, f: () => Promise<T>): Promise<T> {
    return this.#topology.withTimeout(redis, name, f);
  }

  /** Records the batch in the registry, on the primary (replicated from there). */
  writeRegistry(primary: Redis | Cluster, batch: readonly NodeUserChange[]): Promise<void> {
    return this.#withTimeout(primary, 'the registry', () => {
      const p = primary.pipeline();
      for (const c of batch) {
        if (c.sha) p.hset(nodeUsersKey(this.#prefix), c.node, c.sha);
        else p.hdel(nodeUsersKey(this.#prefix), c.node);
      }
      return p.exec().then(checkPipeline);
    });
  }

  /** Every registered user: node -> password hash. */
  async registry(primary: Redis | Cluster): Promise<Map<string, string>> {
    return registryOf(await this.#withTimeout(primary, 'the registry', () => primary.hgetall(nodeUsersKey(this.#prefix))));
  }

  /** `node`'s registered password hash, if any. */
  registered(primary: Redis | Cluster, node: string): Promise<string | null> {
    return this.#withTimeout(primary, 'the registry', () => primary.hget(nodeUsersKey(this.#prefix), node));
  }

  /** The nodes over their memory budget (src/core/redis-budget/restriction.ts): their users are applied read-only. */
  async restricted(primary: Redis | Cluster): Promise<Set<string>> {
    return new Set(Object.keys(await this.#withTimeout(primary, 'the restrictions', () => primary.hgetall(nodeRestrictionsKey(this.#prefix)))));
  }

  /** One pipeline per server with every change of the batch; a server fails or succeeds as a whole. */
  async applyEverywhere(servers: Server[], batch: readonly NodeUserChange[]): Promise<ApplyReport> {
    const report: ApplyReport = { applied: [], failed: [] };
    const { pipeline, swaps } = aclCommands(this.#prefix, batch);
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
            for (const args of pipeline) p.call('ACL', ...args);
            checkPipeline(await p.exec());
            for (const [del, set] of swaps)
              checkPipeline(
                await s.redis
                  .multi()
                  .call('ACL', ...del!)
                  .call('ACL', ...set!)
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
      this.#log.warn({ failed: report.failed, changes: batch.length }, 'node Redis users not applied on every server (the reconcile retries)');
    return report;
  }

  /**
   * Brings every server in line with the registry: all of each server's users when `full` (or
   * when the server missed a change before), only the missing and the extra ones otherwise.
   */
  async syncAll(full: boolean): Promise<ApplyReport> {
    const servers = await this.servers();
    const registry = await this.registry(servers.registry);
    const restricted = await this.restricted(servers.registry);
    const report: ApplyReport = { applied: [], failed: [] };
    await Promise.all(
      servers.all.map(async (s) => {
        const r = await this.#syncServer(s, registry, restricted, full || this.#dirty.has(s.address));
        report.applied.push(...r.applied);
        report.failed.push(...r.failed);
      }),
    );
    return report;
  }

  async #syncServer(s: Server, registry: ReadonlyMap<string, string>, restricted: ReadonlySet<string>, full: boolean): Promise<ApplyReport> {
    if (s.down) {
      this.#dirty.add(s.address);
      return { applied: [], failed: [{ server: s.address, error: s.down }] };
    }
    try {
      const users = await this.#withTimeout(s.redis, s.address, async () => (await s.redis.call('ACL', 'USERS')) as string[]);
      const changes = serverChanges(users, registry, restricted, full);
      if (changes.length === 0) {
        this.#dirty.delete(s.address);
        return { applied: [s.address], failed: [] };
      }
      // In slices: one server's pipeline holds at most maxBatch changes.
      for (let i = 0; i < changes.length; i += this.#maxBatch) {
        const r = await this.applyEverywhere([s], changes.slice(i, i + this.#maxBatch));
        if (r.failed.length > 0) return r;
      }
      this.#dirty.delete(s.address);
      this.#log.info({ server: s.address, changes: changes.length, full }, 'node Redis users brought in line with the registry');
      return { applied: [s.address], failed: [] };
    } catch (err) {
      this.#dirty.add(s.address);
      return { applied: [], failed: [{ server: s.address, error: errText(err) }] };
    }
  }
}

function checkPipeline(results: [Error | null, unknown][] | null): void {
  if (!results) throw new Error('the pipeline was not run (connection closed)');
  const firstError = results.find(([err]) => err)?.[0];
  if (firstError) throw firstError;
}
