import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { createRealHost } from '../../../../workers/host/real-host.ts';
import { startSelfChecks } from '../../../../workers/node-agent/self-checks.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';

// The node agent's own placeholder check against a real Redis, on a host root of the test's
// (its placeholder record and sysfs): a returned disk makes exactly one release job however
// often the check runs; a disk still missing makes none.

const STATE = '/var/lib/volume-medic';
const WWN = '5000c500a1b2c3d4';

describe('the agent’s placeholder check with a real Redis', () => {
  const prefix = uniquePrefix('selfchecks');
  const redis = new Redis(redisUrl());
  const roots: string[] = [];
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
    for (const r of roots) await rm(r, { recursive: true, force: true });
  });

  it('stores one release job for a returned disk, and none for a missing one', async () => {
    const root = await mkdtemp(join(tmpdir(), 'vm-selfcheck-'));
    roots.push(root);
    await mkdir(join(root, STATE, 'placeholders'), { recursive: true });
    for (const [pv, wwn] of [
      ['local-pv-back', WWN],
      ['local-pv-gone', '5000c500deadbeef'],
    ] as const) {
      await writeFile(
        join(root, STATE, 'placeholders', `${pv}.json`),
        JSON.stringify({
          version: 1,
          pv,
          path: `/dev/disk/by-id/wwn-0x${wwn}`,
          wwn,
          loop: pv === 'local-pv-back' ? 'loop101' : 'loop102',
          image: `${STATE}/placeholders/${pv}.img`,
          createdAt: '2026-12-01T03:00:00.000Z',
          jobId: `lpv_${pv}_0123456789ab`,
          disksAtPlacement: [],
        }),
      );
    }
    await mkdir(join(root, 'sys/block/sdq/device'), { recursive: true });
    await writeFile(join(root, 'sys/block/sdq/device/wwid'), `naa.${WWN}\n`);

    const dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('node-agent') });
    const outcomes: boolean[] = [];
    const check = () =>
      startSelfChecks({
        node: 'worker-9',
        host: createRealHost({ root }),
        stateDir: STATE,
        intervalMs: 0,
        log: pino({ level: 'silent' }),
        enqueue: async (jobs) => outcomes.push(...(await dispatcher.enqueue(jobs)).map((e) => e.deduplicated)),
      }).first;
    await check();
    await check();
    const jobs = await dispatcher.queue('vm-node-{worker-9}').getJobs(['wait', 'delayed', 'active', 'completed', 'failed']);
    expect(jobs.map((j) => (j.data as { target: { pv: string } }).target.pv)).toEqual(['local-pv-back']);
    expect(outcomes).toEqual([false, true]);
    await dispatcher.close();
  });
});
