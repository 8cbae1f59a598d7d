import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/lib/local-redis.ts';
import { redisAnswers } from '../../scripts/lib/local-redis.ts';
import { setTimeout as sleep } from 'node:timers/promises';

// Real Redis topologies on loopback, started by the test that needs them and stopped by PID:
// a 3-master Cluster (`redis-server --cluster-enabled yes` + `redis-cli --cluster create`) and a
// Sentinel set (primary, replica, three `redis-server --sentinel`). Nothing persists; every
// server lives in its own temporary directory.

export interface Server {
  port: number;
  proc: ChildProcess;
  /** SIGKILL: the server dies as on a power loss (no persistence, nothing flushed). */
  kill(): void;
  /**
   * SIGKILL, and the port kept for the server's return (restartAsReplica): until then a holder
   * on it resets every connection, as a dead server's port refuses them. Released, any other
   * test's freePort() could be handed it meanwhile, and the "restarted" server would be theirs.
   */
  crash(): Promise<void>;
}

class Servers {
  readonly dir = mkdtempSync(join(tmpdir(), 'vm-redis-topology-'));
  readonly all: Server[] = [];

  start(port: number, args: string[], confText?: string): Server {
    // A directory per start: a replica's full sync writes dump.rdb, which a server started later
    // in the same directory would load.
    const dir = join(this.dir, `${port}-${this.all.length}`);
    mkdirSync(dir);
    const conf = confText === undefined ? [] : [this.writeConf(dir, confText)];
    const proc = spawn('redis-server', [...conf, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...args], {
      stdio: 'ignore',
    });
    proc.on('error', () => {});
    const kill = (): void => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    };
    const server: Server = {
      port,
      proc,
      kill,
      crash: async () => {
        const exited = new Promise<void>((resolve) => {
          if (proc.exitCode !== null || proc.signalCode !== null) resolve();
          else proc.once('exit', () => resolve());
        });
        kill();
        await exited;
        await this.hold(port);
      },
    };
    this.all.push(server);
    return server;
  }

  /** Ports of crashed servers, held (see Server.crash) until the server starts again. */
  private readonly held = new Map<number, NetServer>();

  private async hold(port: number): Promise<void> {
    const holder = createServer((socket) => socket.resetAndDestroy());
    // The dead server's sockets may linger in TIME_WAIT: Node sets SO_REUSEADDR, as Redis does.
    await new Promise<void>((resolve, reject) => {
      holder.once('error', reject);
      holder.listen(port, '127.0.0.1', () => resolve());
    });
    this.held.set(port, holder);
  }

  /** Gives a held port back, for the server about to start on it. */
  async release(port: number): Promise<void> {
    const holder = this.held.get(port);
    if (!holder) return;
    this.held.delete(port);
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }

  private writeConf(dir: string, text: string): string {
    const p = join(dir, 'redis.conf');
    writeFileSync(p, text);
    return p;
  }

  stop(): void {
    for (const s of this.all) s.kill();
    for (const holder of this.held.values()) holder.close();
    this.held.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export const answers = (port: number): Promise<boolean> => redisAnswers(`redis://127.0.0.1:${port}`);

/** The process_id INFO reports on `port`. */
async function processIdOn(port: number): Promise<number | undefined> {
  const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  r.on('error', () => {});
  try {
    return Number(/^process_id:(\d+)/m.exec(String(await r.info('server')))?.[1]);
  } finally {
    r.disconnect();
  }
}

async function until(what: string, f: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Several free ports, distinct. */
async function ports(n: number): Promise<number[]> {
  const out = new Set<number>();
  while (out.size < n) out.add(await freePort());
  return [...out];
}

export const topologiesAvailable = (): string | undefined =>
  spawnSync('redis-server', ['--version']).error
    ? 'redis-server is not installed'
    : spawnSync('redis-cli', ['--version']).error
      ? 'redis-cli is not installed'
      : undefined;

export interface LocalCluster {
  /** The masters. */
  nodes: { host: string; port: number }[];
  /** The replicas (with `replicas: 1`), one per master. */
  replicas: { host: string; port: number }[];
  /** REDIS_CLUSTER_NODES */
  env: string;
  stop(): void;
}

/** Three masters (`masters`: more), with `replicas: 1` a replica of each, every slot assigned. */
export async function startCluster(extraArgs: readonly string[] = [], o: { replicas?: 0 | 1; masters?: number } = {}): Promise<LocalCluster> {
  const servers = new Servers();
  try {
    const n = (o.masters ?? 3) * (1 + (o.replicas ?? 0));
    const ps = await ports(2 * n);
    const all = ps.slice(0, n);
    for (const [i, p] of all.entries())
      servers.start(p, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${p}.conf`,
        '--cluster-port',
        String(ps[n + i]),
        '--cluster-node-timeout',
        '2000',
        ...extraArgs,
      ]);
    for (const p of all) await until(`cluster node ${p}`, () => answers(p));
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...all.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(o.replicas ?? 0), '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
    await until('cluster state ok on every node', async () => {
      for (const p of all) {
        const info = spawnSync('redis-cli', ['-p', String(p), 'cluster', 'info'], { encoding: 'utf8' }).stdout;
        if (!/cluster_state:ok/.test(info)) return false;
      }
      return true;
    });
    // Which ones redis-cli made masters, from each server's own role; replicas in sync.
    const role = (p: number): string => spawnSync('redis-cli', ['-p', String(p), 'info', 'replication'], { encoding: 'utf8' }).stdout;
    const masters = all.filter((p) => /role:master/.test(role(p)));
    const replicas = all.filter((p) => !masters.includes(p));
    await until('cluster replicas in sync', async () => replicas.every((p) => /master_link_status:up/.test(role(p))));
    // ...and announced: CLUSTER SLOTS (what clients learn the topology from) leaves out a replica
    // until gossip reports its replication offset, on each server in its own time: a client may
    // ask any of them, so every server must list every replica.
    await until("cluster replicas in every server's CLUSTER SLOTS", async () =>
      all.every((at) => {
        const slots = spawnSync('redis-cli', ['-p', String(at), 'cluster', 'slots'], { encoding: 'utf8' }).stdout.split('\n');
        return replicas.every((p) => slots.includes(String(p)));
      }),
    );
    return {
      nodes: masters.map((port) => ({ host: '127.0.0.1', port })),
      replicas: replicas.map((port) => ({ host: '127.0.0.1', port })),
      env: masters.map((p) => `127.0.0.1:${p}`).join(','),
      stop: () => servers.stop(),
    };
  } catch (err) {
    servers.stop();
    throw err;
  }
}

export interface LocalSentinelSet {
  name: string;
  primary: Server;
  replica: Server;
  /** Every replica started (`replicas`), `replica` first. */
  replicas: Server[];
  sentinels: number[];
  /** The sentinel processes, in the order of `sentinels` (a test may SIGSTOP one). */
  sentinelServers: Server[];
  /** REDIS_SENTINELS */
  env: string;
  /** The primary's address as the sentinels have it now. */
  primaryPort(): Promise<number>;
  /** Starts a server on `port` (a crashed one's, held till now) as a replica of the current primary (an old primary coming back). */
  restartAsReplica(port: number): Promise<Server>;
  stop(): void;
}

/**
 * A primary, one replica (`o.replicas`: more) and three sentinels (quorum 2) that fail over within
 * ~2-3 s of the primary's death (down-after 1000 ms). Resolves once the replicas are in sync and
 * every sentinel knows the other two and every replica, so a failover can happen at once.
 */
export async function startSentinelSet(name = 'vmprimary', o: { replicas?: number } = {}): Promise<LocalSentinelSet> {
  const servers = new Servers();
  const nReplicas = o.replicas ?? 1;
  try {
    const [pp, ...rest] = await ports(4 + nReplicas);
    const rps = rest.slice(0, nReplicas);
    const sp = rest.slice(nReplicas);
    const primary = servers.start(pp!, []);
    await until('primary', () => answers(pp!));
    const replicas = rps.map((rp) => servers.start(rp, ['--replicaof', '127.0.0.1', String(pp)]));
    const replica = replicas[0]!;
    const sentinelConf = [
      'sentinel resolve-hostnames no',
      `sentinel monitor ${name} 127.0.0.1 ${pp} 2`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 4000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n');
    const sentinelServers = sp.map((p) => servers.start(p, ['--sentinel'], sentinelConf));
    const admin = (port: number) => new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    await until('replica in sync', async () => {
      const r = admin(pp!);
      r.on('error', () => {});
      try {
        const info = String(await r.info('replication'));
        return new RegExp(`connected_slaves:${nReplicas}`).test(info) && (info.match(/state=online/g) ?? []).length === nReplicas;
      } catch {
        return false;
      } finally {
        r.disconnect();
      }
    });
    await until(
      'sentinels know each other and the replica',
      async () => {
        for (const p of sp) {
          const s = admin(p);
          s.on('error', () => {});
          try {
            const others = (await s.call('SENTINEL', 'SENTINELS', name)) as unknown[];
            const replicas = (await s.call('SENTINEL', 'REPLICAS', name)) as unknown[];
            if (others.length < 2 || replicas.length < nReplicas) return false;
            // A replica the sentinel has only heard of is flagged `disconnected` until it connects.
            for (const r of replicas as string[][]) {
              const flags = r[r.indexOf('flags') + 1] ?? '';
              if (/disconnected|s_down|o_down/.test(flags)) return false;
            }
          } catch {
            return false;
          } finally {
            s.disconnect();
          }
        }
        return true;
      },
      20_000,
    );
    /** The primary a sentinel names when it has no failover under way for it; undefined otherwise. */
    const settledPrimaryOf = async (p: number): Promise<number | undefined> => {
      const s = admin(p);
      s.on('error', () => {});
      try {
        const f = (await s.call('SENTINEL', 'MASTER', name)) as string[];
        const field = (k: string): string | undefined => f[f.indexOf(k) + 1];
        return field('flags') === 'master' ? Number(field('port')) : undefined;
      } catch {
        return undefined;
      } finally {
        s.disconnect();
      }
    };
    const primaryPort = async (): Promise<number> => {
      for (const p of sp) {
        const s = admin(p);
        s.on('error', () => {});
        try {
          const addr = (await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string] | null;
          if (addr) return Number(addr[1]);
        } catch {
          // Try the next sentinel.
        } finally {
          s.disconnect();
        }
      }
      throw new Error('no sentinel answered');
    };
    return {
      name,
      primary,
      replica,
      replicas,
      sentinels: sp,
      sentinelServers,
      env: sp.map((p) => `127.0.0.1:${p}`).join(','),
      primaryPort,
      restartAsReplica: async (port: number) => {
        // Every sentinel names the same primary, its failover finished: a server started while one
        // is still under way can be taken for the primary again by a sentinel that never adopted
        // the new one, and the promoted replica then resynchronises from the empty restarted server.
        let current = 0;
        await until(
          'every sentinel to name one primary, no failover under way',
          async () => {
            const views = await Promise.all(sp.map((p) => settledPrimaryOf(p)));
            current = views[0] ?? 0;
            return current !== 0 && views.every((v) => v === current);
          },
          30_000,
        );
        await servers.release(port);
        const s = servers.start(port, ['--replicaof', '127.0.0.1', String(current)]);
        await until(`old primary back on ${port}`, () => answers(port));
        // The server answering is the one just started, not another test's that took the port.
        const pid = await processIdOn(port);
        if (pid !== s.proc.pid) throw new Error(`port ${port} is held by another process (pid ${pid}), not the restarted server (pid ${s.proc.pid})`);
        return s;
      },
      stop: () => servers.stop(),
    };
  } catch (err) {
    servers.stop();
    throw err;
  }
}
