import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { startBalancer, type Balancer } from '../../../bench/soak/balancer.ts';
import { planFaults } from '../../../bench/soak/faults.ts';
import { buckets, recoveries } from '../../../bench/soak/latency.ts';
import { slopes } from '../../../bench/soak/memory.ts';

// The soak's own arithmetic (bench/soak/): its schedule, its memory slope, its recovery
// measure and its balancer, each on made-up input whose answer is known.

describe('the soak schedule', () => {
  it('fits every fault kind once into five minutes, and four rounds into an hour', () => {
    const five = planFaults(300_000, 40_000, 30_000, 30_000, 60_000);
    expect(new Set(five.map((f) => f.kind)).size).toBe(7);
    expect(five.every((f) => f.at >= 40_000 && f.at + f.lastsMs <= 270_000)).toBe(true);
    const hour = planFaults(3_600_000, 120_000, 120_000, 120_000, 60_000);
    expect(hour).toHaveLength(28);
    expect(hour.filter((f) => f.kind === 'sentinel-failover')).toHaveLength(4);
    expect(hour.filter((f) => f.lastsMs > 0).every((f) => f.lastsMs === 60_000)).toBe(true);
  });
});

describe('the RSS slope', () => {
  const life = (name: string, perMinute: number) => ({
    name,
    pid: 1,
    samples: Array.from({ length: 61 }, (_, i) => ({ t: i * 60_000, mib: 100 + perMinute * i + (i % 2 ? 3 : -3) })),
  });

  it('reads a steady growth through GC-like wobble, per hour, and a flat one as about zero', () => {
    const [flat, growing] = slopes([life('flat', 0), life('growing', 0.5)], 0, 3_600_000, 600_000, 0);
    expect(Math.abs(flat!.mibPerHour)).toBeLessThan(1);
    expect(growing!.mibPerHour).toBeCloseTo(30, 0);
  });

  it('fits only the samples inside the window and leaves out a life too short for it', () => {
    const [s] = slopes([life('growing', 1)], 600_000, 1_200_000, 300_000, 0);
    expect(s!.minutes).toBe(10);
    expect(slopes([life('growing', 1)], 3_500_000, 3_600_000, 300_000)).toEqual([]);
  });

  it("leaves out a life's first minute (a restarted process loading its modules)", () => {
    const [s] = slopes([life('restarted', 1)], 0, 1_200_000, 300_000);
    expect(s!.minutes).toBe(19);
  });
});

describe('recovery after a fault', () => {
  it('is the time from the fault to the first 5 s window back under the normal p99', () => {
    // 10 ms normally; 2 s from 100 s to 112 s after a fault at 100 s.
    const samples = Array.from({ length: 2000 }, (_, i) => ({ at: i * 100, ms: i * 100 >= 100_000 && i * 100 < 112_000 ? 2_000 : 10 }));
    const [r] = recoveries(samples, [{ kind: 'client-kill', start: 100_000, end: 100_000, detail: '' }], 50, 5_000, 200_000);
    expect(r!.recoveryMs).toBe(15_000);
    expect(r!.worstP99Ms).toBe(2_000);
    const lasting = recoveries(samples, [{ kind: 'api-503', start: 90_000, end: 100_000, detail: '' }], 50, 5_000, 200_000);
    expect(lasting[0]!.recoveryMs).toBe(15_000);
    expect(buckets(samples, 0, 10_000)[10]).toMatchObject({ t: 100, n: 100, p50: 2_000 });
  });
});

describe('the loopback balancer', () => {
  let balancer: Balancer | undefined;
  const servers: Server[] = [];
  afterEach(async () => {
    await balancer?.close();
    for (const s of servers) s.close();
  });

  const backend = async (name: string): Promise<number> => {
    const s = createServer((c) => c.end(name));
    servers.push(s);
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    return (s.address() as { port: number }).port;
  };
  const ask = async (url: string): Promise<string> => {
    const { port } = new URL(url);
    const { connect } = await import('node:net');
    const c = connect({ host: '127.0.0.1', port: Number(port) });
    let text = '';
    c.on('data', (d) => {
      text += d.toString();
    });
    await once(c, 'close');
    return text;
  };

  it('spreads connections over the backends and sends them to the live one while the other refuses', async () => {
    const a = await backend('a');
    const b = await backend('b');
    balancer = await startBalancer([a, b]);
    expect([await ask(balancer.url), await ask(balancer.url)].sort()).toEqual(['a', 'b']);
    servers[1]!.close();
    await once(servers[1]!, 'close');
    expect([await ask(balancer.url), await ask(balancer.url), await ask(balancer.url)]).toEqual(['a', 'a', 'a']);
  });
});
