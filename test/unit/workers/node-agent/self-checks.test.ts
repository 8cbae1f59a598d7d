import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { triage } from '../../../../src/control/triage/triage.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { interruptedCleanup, returnedDiskReleases, startSelfChecks } from '../../../../workers/node-agent/self-checks.ts';

// The agent notices by itself that a placeholder's disk came back, and that a cleanup was
// interrupted; it asks for the job like any sender would, and the runbook verifies again.

const STATE = '/var/lib/volume-medic';
const WWN = '5000c500a1b2c3d4';
const PATH = `/dev/disk/by-id/wwn-0x${WWN}`;

function node(): FakeHost {
  const host = new FakeHost();
  host.put(
    `${STATE}/placeholders/local-pv-1.json`,
    JSON.stringify({
      version: 1,
      pv: 'local-pv-1',
      path: PATH,
      wwn: WWN,
      loop: 'loop101',
      image: `${STATE}/placeholders/local-pv-1.img`,
      createdAt: '2026-12-01T03:00:00.000Z',
      jobId: 'lpv_local-pv-1_0123456789ab',
      disksAtPlacement: [],
    }),
  );
  host.put('/proc/sys/kernel/random/boot_id', '0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\n');
  return host;
}
const diskBack = (host: FakeHost, name = 'sdq', wwid = `naa.${WWN}`): void => void host.put(`/sys/block/${name}/device/wwid`, `${wwid}\n`);

describe('a placeholder whose disk came back', () => {
  it('asks for no release while the disk is still missing', async () => {
    expect(await returnedDiskReleases(node(), STATE, 'worker-1')).toEqual([]);
  });

  it('asks for a detector’s release, with the key triage gives NPD’s release of the same PV, so the two fold', async () => {
    const host = node();
    diskBack(host);
    const jobs = await returnedDiskReleases(host, STATE, 'worker-1');
    expect(jobs).toHaveLength(1);
    expect(RemediationJob.safeParse(jobs[0]).success).toBe(true);
    expect(jobs[0]).toMatchObject({
      action: 'release',
      release: { by: 'detector', force: false },
      target: { node: 'worker-1', pv: 'local-pv-1', path: PATH },
    });
    expect(jobs[0]?.evidence[0]).toMatchObject({
      source: 'agent',
      summary: `the disk of PV local-pv-1 (WWN ${WWN}) is back on worker-1 as /dev/sdq`,
    });
    const lookups = new InMemoryLookups();
    const fromNpd = await triage(
      [
        {
          kind: 'local-device-restored',
          version: 1,
          pv: 'local-pv-1',
          path: PATH,
          node: 'worker-1',
          identity: ['x'],
          evidence: { source: 'npd', summary: 'cleared', raw: {} },
        },
      ],
      { lookups },
    );
    expect(fromNpd.jobs[0]?.key).toBe(jobs[0]?.key);
  });

  it('does not take another disk, or a loop device, for it', async () => {
    const host = node();
    diskBack(host, 'sdr', 'naa.5000c500cafef00d');
    host.put('/sys/block/loop101/loop/backing_file', `${STATE}/placeholders/local-pv-1.img\n`);
    expect(await returnedDiskReleases(host, STATE, 'worker-1')).toEqual([]);
  });
});

describe('intent records of an interrupted cleanup', () => {
  it('asks for a residual job for this node and boot when one is on the host', async () => {
    const host = node();
    expect(await interruptedCleanup(host, STATE, 'worker-1')).toBeNull();
    host.put(
      `${STATE}/intents/residual-multipath/3600140503b080d39e3f42d4a24115262.json`,
      JSON.stringify({
        version: 1,
        jobId: 'residual_worker-1_1',
        map: 'mpathb',
        wwid: '3600140503b080d39e3f42d4a24115262',
        dm: 'dm-0',
        disks: [{ name: 'sdc', hctl: '2:0:0:1', wwid: '3600140503b080d39e3f42d4a24115262' }],
        createdAt: '2026-12-04T01:00:00.000Z',
        bootId: 'b',
        done: [],
      }),
    );
    const job = await interruptedCleanup(host, STATE, 'worker-1');
    expect(RemediationJob.safeParse(job).success).toBe(true);
    expect(job).toMatchObject({
      runbook: 'residual-multipath-cleanup',
      target: { node: 'worker-1' },
      bootId: '0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
    });
    expect(job?.evidence[0]?.summary).toMatch(/interrupted cleanup on worker-1: mpathb \(WWID 3600140503b080d39e3f42d4a24115262, job residual_worker-1_1\)/);
  });
});

/** A clock for the interval: the test fires the ticks, nothing sleeps. */
function manualEvery() {
  const timers: Array<{ ms: number; tick: () => void; stopped: boolean }> = [];
  const every = (ms: number, tick: () => void) => {
    const t = { ms, tick, stopped: false };
    timers.push(t);
    return () => void (t.stopped = true);
  };
  const fire = () => {
    for (const t of timers) if (!t.stopped) t.tick();
  };
  return { every, timers, fire };
}
const settle = () => new Promise((r) => setImmediate(r));

describe('the checks', () => {
  it('look at start and then on their interval, and a failure to store is logged, not thrown', async () => {
    const host = node();
    diskBack(host);
    const stored: string[] = [];
    let fail = true;
    const clock = manualEvery();
    const checks = startSelfChecks({
      node: 'worker-1',
      host,
      stateDir: STATE,
      intervalMs: 300_000,
      log: pino({ level: 'silent' }),
      every: clock.every,
      enqueue: async (jobs) => {
        if (fail) {
          fail = false;
          throw new Error('Redis away');
        }
        stored.push(...jobs.map((j) => j.key));
      },
    });
    await checks.first;
    expect(stored).toEqual([]);
    expect(clock.timers.map((t) => t.ms)).toEqual([300_000]);
    clock.fire();
    await settle();
    clock.fire();
    await checks.stop();
    expect(stored).toHaveLength(2);
    expect(new Set(stored).size).toBe(1);
    expect(clock.timers[0]?.stopped).toBe(true);
  });

  it('look at start only with an interval of 0', async () => {
    const clock = manualEvery();
    const checks = startSelfChecks({
      node: 'worker-1',
      host: node(),
      stateDir: STATE,
      intervalMs: 0,
      log: pino({ level: 'silent' }),
      every: clock.every,
      enqueue: async () => {},
    });
    await checks.first;
    expect(clock.timers).toEqual([]);
  });

  it('skip a tick while a check still runs, and stop only once it has finished', async () => {
    const host = node();
    diskBack(host);
    const clock = manualEvery();
    let calls = 0;
    let release: () => void = () => {};
    const checks = startSelfChecks({
      node: 'worker-1',
      host,
      stateDir: STATE,
      intervalMs: 1000,
      log: pino({ level: 'silent' }),
      every: clock.every,
      enqueue: async () => {
        calls++;
        if (calls === 2) await new Promise<void>((r) => (release = r));
      },
    });
    await checks.first;
    clock.fire();
    await settle();
    expect(calls).toBe(2);
    clock.fire();
    clock.fire();
    await settle();
    expect(calls).toBe(2);
    let stopped = false;
    const stopping = checks.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(calls).toBe(2);
  });
});
