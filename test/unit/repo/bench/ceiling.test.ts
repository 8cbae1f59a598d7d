import { describe, expect, it } from 'vitest';
import { ceiling } from '../../../../bench/lib/ceiling.ts';
import { parseRedisCpu } from '../../../../bench/lib/redis-cpu.ts';

// `INFO cpu` as redis-server 7.0.15 (Debian 12) answers it, CRLF line ends included.
const INFO_7 = [
  '# CPU',
  'used_cpu_sys:0.641256',
  'used_cpu_user:0.943050',
  'used_cpu_sys_children:0.000000',
  'used_cpu_user_children:0.000000',
  'used_cpu_sys_main_thread:0.639639',
  'used_cpu_user_main_thread:0.943095',
  '',
].join('\r\n');

describe('parseRedisCpu', () => {
  it('reads the main thread and the whole process, in ms', () => {
    const c = parseRedisCpu(INFO_7);
    expect(c.mainMs).toBeCloseTo(639.639 + 943.095, 6);
    expect(c.processMs).toBeCloseTo(641.256 + 943.05, 6);
  });

  it('falls back to the process before Redis 6.2 reported the main thread', () => {
    const old = INFO_7.split('\r\n')
      .filter((l) => !l.includes('main_thread'))
      .join('\r\n');
    const c = parseRedisCpu(old);
    expect(c.mainMs).toBe(c.processMs);
  });

  it('does not mistake the children fields for the process fields', () => {
    const children = INFO_7.replace('used_cpu_sys_children:0.000000', 'used_cpu_sys_children:9.000000');
    expect(parseRedisCpu(children).processMs).toBeCloseTo(641.256 + 943.05, 6);
  });

  it('fails loudly on an answer without CPU fields', () => {
    expect(() => parseRedisCpu('# Server\r\nredis_version:7.0.15\r\n')).toThrow(/used_cpu_sys/);
  });
});

describe('ceiling', () => {
  it('bounds jobs/s by one Redis thread and by the cores all three processes share', () => {
    // Stop 15's AMD EPYC: the plain addBulk's 50-alert groups cost, per alert, the server 31.6 us,
    // Redis 26.8 us and the load generator 3.9 us.
    const c = ceiling({ server: 31.6, redis: 26.8, loadGen: 3.9 }, 2);
    expect(c.redis).toBe(37_313);
    expect(c.machine).toBe(32_102);
  });

  it('reaches 60,000 jobs/s only when Redis spends under 16.7 us per job', () => {
    expect(ceiling({ server: 0, redis: 16.6, loadGen: 0 }, 2).redis).toBeGreaterThanOrEqual(60_000);
    expect(ceiling({ server: 0, redis: 16.7, loadGen: 0 }, 2).redis).toBeLessThan(60_000);
  });

  it('is unbounded for a cost of zero (the bare endpoint has no Redis)', () => {
    expect(ceiling({ server: 10, redis: 0, loadGen: 5 }, 2)).toEqual({ redis: Infinity, machine: 133_333 });
  });

  it('refuses costs that are not CPU times', () => {
    expect(() => ceiling({ server: NaN, redis: 1, loadGen: 1 }, 2)).toThrow(/server/);
    expect(() => ceiling({ server: 1, redis: -1, loadGen: 1 }, 2)).toThrow(/redis/);
    expect(() => ceiling({ server: 1, redis: 1, loadGen: 1 }, 0)).toThrow(/cores/);
  });
});
