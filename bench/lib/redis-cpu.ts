import type { Redis } from 'ioredis';

// redis-server's CPU time so far, from `INFO cpu`, in ms (microsecond resolution). The main
// thread is the one that runs every command and script, and (without io-threads, the default)
// all socket I/O: one core at most, whatever the machine has. So its CPU per job bounds the jobs
// per second one Redis can store, whichever client sends them.

export interface RedisCpu {
  /** The main thread's user + system time, ms. */
  mainMs: number;
  /** The whole process's (main thread and background threads) user + system time, ms. */
  processMs: number;
}

export function parseRedisCpu(info: string): RedisCpu {
  const field = (k: string): number => {
    const m = new RegExp(`^${k}:([0-9.]+)\\r?$`, 'm').exec(info);
    if (!m) throw new Error(`INFO cpu has no ${k}`);
    return Number(m[1]) * 1000;
  };
  const processMs = field('used_cpu_sys') + field('used_cpu_user');
  // Redis 6.2 and later report the main thread on its own; older ones only the process.
  const hasMain = /^used_cpu_sys_main_thread:/m.test(info);
  const mainMs = hasMain ? field('used_cpu_sys_main_thread') + field('used_cpu_user_main_thread') : processMs;
  return { mainMs, processMs };
}

export async function redisCpu(admin: Redis): Promise<RedisCpu> {
  return parseRedisCpu(await admin.info('cpu'));
}
