import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, redisAnswers } from '../../scripts/lib/local-redis.ts';

// A private redis-server on a free loopback port, for benchmarks and fault tests: they flood it,
// flush it and stop it, which must never happen to the shared one on 6379. `persistent` keeps an
// append-only file fsynced on every write, so stop() + start() is a Redis that went away and came
// back with its data (a restart of a real deployment), not an empty one.

export interface PrivateRedis {
  url: string;
  port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s); its data stays for start(). */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  destroy(): Promise<void>;
  /** The server's process id (valgrind's, under `callgrind`: the same process). */
  pid(): number | undefined;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export interface PrivateRedisOptions {
  persistent?: boolean;
  /** More redis-server arguments (e.g. `--maxclients 40000`). */
  args?: readonly string[];
  /** Open-file limit of the server (set with prlimit; the fleet bench needs more than the shell's). */
  nofile?: number;
  /**
   * Runs the server under valgrind's callgrind, its counts read between two points
   * (bench/lib/callgrind.ts): instructions counted, not seconds, so the same work gives the same
   * figure whatever else the shared machine is doing. About 50x slower.
   */
  callgrind?: { outDir: string };
}

export async function startPrivateRedis(opts: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'vm-private-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
    ...(opts.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ...(opts.args ?? []),
  ];
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const c = opts.callgrind
      ? spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${opts.callgrind.outDir}/callgrind.out.%p`, 'redis-server', ...args], {
          stdio: 'ignore',
        })
      : opts.nofile
        ? spawn('prlimit', [`--nofile=${opts.nofile}:${opts.nofile}`, '--', 'redis-server', ...args], { stdio: 'ignore' })
        : spawn('redis-server', args, { stdio: 'ignore' });
    child = c;
    live.add(c);
    c.once('exit', () => live.delete(c));
    for (let i = 0; i < (opts.callgrind ? 1200 : 200); i++) {
      if (await redisAnswers(url)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server on port ${port} did not answer`);
  };
  const stop = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGTERM');
    const killer = setTimeout(() => c.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
  };
  await start();
  return {
    url,
    port,
    stop,
    start,
    pid: () => child?.pid,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
