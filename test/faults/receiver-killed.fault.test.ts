import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChild, type Child } from '../support/child.ts';
import { fill, groupedAlerts, oneAlert } from '../testkit/load-payloads.ts';
import { startPrivateRedis, type PrivateRedis } from '../support/redis-server.ts';
import { sleep } from '../support/alertmanager.ts';
import { TEST_KEYS_DIR } from '../support/trust.ts';

// The receiver is SIGKILLed in the middle of a load of unique webhooks (1-alert and grouped
// 50-alert payloads from 16 concurrent senders). Every job the receiver acknowledged with 202
// before it died must be in Redis: a 202 is only ever sent after the pipeline that stored the
// job has answered.

const PREFIX = 'vmfault-kill';
const SENDERS = 16;

describe('receiver killed under load', () => {
  let redis: PrivateRedis;
  let receiver: Child;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    await receiver?.kill('SIGKILL');
    admin?.disconnect();
    await redis?.destroy();
  });

  it('loses nothing it acknowledged with 202', async () => {
    receiver = startChild(
      new URL('../../bench/servers/receiver.ts', import.meta.url).pathname,
      { REDIS_URL: redis.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'warn', SIGNING_KEYS_DIR: TEST_KEYS_DIR },
      { stdout: 'ignore' },
    );
    const url = await receiver.waitLine('READY ');
    const payloads = [oneAlert(), groupedAlerts(50)];
    const acked: { queue: string; key: string }[] = [];
    let failed = 0;
    let n = 0;
    let stop = false;
    const sender = async (s: number): Promise<void> => {
      while (!stop) {
        const p = payloads[s % payloads.length]!;
        try {
          const res = await fetch(url + p.path, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: fill(p, `k${s}x${n++}`),
          });
          const body = (await res.json()) as { accepted: { queue: string; key: string }[] };
          if (res.status === 202) acked.push(...body.accepted.map((a) => ({ queue: a.queue, key: a.key })));
        } catch {
          // The receiver died with this request in flight: not acknowledged, the sender would retry.
          failed++;
          if (receiver.proc.exitCode !== null || receiver.proc.signalCode !== null) return;
        }
      }
    };
    const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
    await sleep(2_500);
    await receiver.kill('SIGKILL');
    stop = true;
    await Promise.all(senders);

    expect(acked.length).toBeGreaterThan(200);
    const pipeline = admin.pipeline();
    for (const a of acked) pipeline.exists(`${PREFIX}:${a.queue}:${a.key}`);
    const exists = (await pipeline.exec())!.map(([, v]) => v);
    const missing = acked.filter((_, i) => exists[i] !== 1);
    console.log(`receiver killed after ${acked.length} acknowledged jobs (${failed} requests cut off): ${missing.length} missing`);
    expect(missing).toEqual([]);
  });
});
