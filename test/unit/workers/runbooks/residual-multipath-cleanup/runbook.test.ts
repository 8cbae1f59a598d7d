import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../../../../src/core/catalogue/result.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { ParkedError } from '../../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { InMemoryAttachedVolumes } from '../../../../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../../../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { observe } from '../../../../../workers/runbooks/residual-multipath-cleanup/observe.ts';
import { DEFAULT_POLICY, type ResidualPolicy } from '../../../../../workers/runbooks/residual-multipath-cleanup/policy.ts';
import { FakeNode, type FakeNodeOptions } from './fake-node.ts';

// The whole runbook (observe -> plan -> act -> verify) on a fake node built from the lab's real
// iscsi-lun-removed capture, in enforce and in dry-run.

const job: ResidualMultipathJob = {
  version: 1,
  key: 'residual_worker-1_boot-1',
  runbook: 'residual-multipath-cleanup',
  target: { node: 'worker-1' },
  bootId: 'boot-1',
  evidence: [{ source: 'k8s-event', summary: 'Node worker-1 has been rebooted', raw: {} }],
};

const ctx = (mode: Mode): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn: 'worker-1',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

function setup(opts: FakeNodeOptions = {}, policy: Partial<ResidualPolicy> = {}, attached = new InMemoryAttachedVolumes(), node = new FakeNode(opts)) {
  const host = node;
  host.put('/proc/sys/kernel/random/boot_id', 'boot-1\n');
  const clock = { t: 0 };
  const sleeps: number[] = [];
  const handler = createResidualMultipathCleanup({
    host,
    stateDir: '/var/lib/volume-medic',
    attached,
    policy,
    now: () => new Date(Date.UTC(2025, 11, 2) + clock.t),
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.t += ms;
    },
  });
  /**
   * Runs the job as the worker would: a job parked until its evidence matures (one sighting of
   * the dead map is not enough to release its queued I/O) runs again when it has.
   */
  const untilDone = async (j: ResidualMultipathJob = job, c: RunbookContext = ctx('enforce')): Promise<RunbookResult> => {
    for (let i = 0; ; i++) {
      try {
        return await handler(j, c);
      } catch (err) {
        if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || i > 3) throw err;
        clock.t = (err.parking.until as Date).getTime() - Date.UTC(2025, 11, 2);
      }
    }
  };
  return { host, handler, sleeps, clock, untilDone };
}

const argvs = (r: RunbookResult): string[] => r.commands.map((c) => c.argv.join(' '));

describe('residual-multipath-cleanup on a node where an iSCSI LUN was removed (enforce)', () => {
  it('waits on its first look: one sighting of a dead map is not enough to release its queued I/O', async () => {
    const { host, handler } = setup();
    const err = await handler(job, ctx('enforce')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParkedError);
    expect((err as ParkedError).parking).toMatchObject({
      reason: 'evidence',
      why: expect.stringMatching(/every path of mpathb stayed dead over time: held for 0 s over 1 observation\(s\); needs 120 s over at least 2/),
    });
    expect(host.commands.some((c) => c[1] === 'message' || (c[0] === 'multipath' && c[1] === '-f'))).toBe(false);
    expect(host.calls.some((c) => c.op === 'writeSysfs')).toBe(false);
  });

  it('releases the queue, flushes mpathb, deletes sdc and sdd, and verifies once mpathb stayed dead past the grace; mpathc is untouched', async () => {
    const { host, untilDone } = setup();
    const r = await untilDone();
    expect(r.outcome).toBe('succeeded');
    expect(r.steps.map((s) => [s.id.split(':')[0], s.status])).toEqual([
      ['record-intent', 'skipped-already-done'],
      ['release-queued-io', 'done'],
      ['flush-map', 'done'],
      ['delete-disk', 'done'],
      ['delete-disk', 'done'],
      ['close-intent', 'done'],
    ]);
    // Every destructive step carries the evidence it stood on, the persistence of the dead paths included.
    const release = r.steps.find((s) => s.id.startsWith('release-queued-io'));
    expect(release?.evidence?.map((e) => e.status).every((x) => x === 'holds')).toBe(true);
    expect(release?.evidence?.find((e) => e.persistence)).toMatchObject({
      persistence: { samples: 2, minSamples: 2, mustHoldMs: 120_000 },
    });
    const ran = argvs(r);
    expect(ran).toContain('dmsetup message mpathb 0 fail_if_no_path');
    expect(ran).toContain('multipath -f mpathb');
    expect(ran).toContain('host:write-sysfs /sys/block/sdd/device/delete 1');
    expect(ran).toContain('host:write-sysfs /sys/block/sdc/device/delete 1');
    expect(ran.filter((c) => /mpathc|sda|sdb|dm-1/.test(c) && !/^(multipath -ll|dmsetup info)/.test(c))).toEqual([]);
    expect(ran.some((c) => c.startsWith('dmsetup remove'))).toBe(false);
    expect(['dm-0', 'sdc', 'sdd'].map((d) => host.has(d))).toEqual([false, false, false]);
    expect(['dm-1', 'sda', 'sdb'].map((d) => host.has(d))).toEqual([true, true, true]);
    expect(r.verification).toMatchObject({ ok: true });
    // The probe of the first look was released with the queue; none is left hanging to report.
    expect(JSON.stringify(r.verification)).not.toMatch(/still hanging/);
    expect(JSON.stringify(r.verification)).toMatch(/map mpathc, left alone, is untouched on dm-1 with paths sda, sdb/);
  });

  it('reports the probe it abandoned and the pid stuck in D state, and never probes the map again while that probe hangs', async () => {
    const { handler, host } = setup();
    const first = await handler(job, ctx('enforce')).catch((e: unknown) => e);
    const dd = (first as ParkedError).result.commands.find((c) => c.argv[0] === 'dd');
    expect(dd).toMatchObject({ timedOut: true, stuckPids: [990] });
    expect((first as ParkedError).result.summary).toMatch(/stayed dead over time/);
    await handler(job, ctx('enforce')).catch((e: unknown) => e);
    expect(host.commands.filter((c) => c[0] === 'dd')).toHaveLength(1);
  });

  it('is a no-op when run a second time', async () => {
    const { host, handler, untilDone } = setup();
    await untilDone();
    const again = await handler({ ...job, key: 'residual_worker-1_boot-2' }, { ...ctx('enforce'), jobId: 'residual_worker-1_boot-2' });
    expect(again.outcome).toBe('nothing-to-do');
    expect(again.summary).toMatch(/mpathc \(dm-1\) left alone: healthy/);
    expect(argvs(again).filter((c) => /^(multipath -f|dmsetup message|host:write-sysfs)/.test(c))).toEqual([]);
    expect(host.has('dm-1')).toBe(true);
  });

  it('waits for the open count to fall and retries the flush that answered "map in use"', async () => {
    const { host, untilDone, sleeps } = setup({ probe: 'io-error' });
    // An opener that gets its EIO only a little after the queue is released.
    host.on(['dmsetup', 'message', 'mpathb', '0', 'fail_if_no_path'], () => {
      host.queueing = false;
      return {};
    });
    let polls = 0;
    host.on(['dmsetup', 'info', '-c', 'mpathb'], () => {
      if (++polls >= 3) host.stuck.clear();
      return {
        stdout: `Name Maj Min Stat Open Targ Event UUID\nmpathb 253 0 L--w ${host.stuck.size} 1 2 mpath-3600140503b080d39e3f42d4a24115262\n`,
      };
    });
    const r = await untilDone();
    expect(r.outcome).toBe('succeeded');
    expect(host.flushAttempts).toBe(2);
    expect(sleeps.length).toBeGreaterThan(0);
  });

  it('reports a probe still hanging after the run, without waiting for it', async () => {
    const { host, untilDone } = setup({ flushRefusesWhileOpen: false });
    // The kernel lets the udev worker go but keeps our probe in D state.
    host.on(['dmsetup', 'message', 'mpathb', '0', 'fail_if_no_path'], () => {
      host.queueing = false;
      return {};
    });
    const r = await untilDone();
    expect(r.outcome).toBe('succeeded');
    expect(r.verification).toMatchObject({
      ok: true,
      checks: expect.arrayContaining([
        expect.objectContaining({
          what: expect.stringMatching(/read probes still hanging after the run/),
          detail: expect.stringMatching(/^990 \(probe of dm-0 since /),
        }),
      ]),
    });
  });

  it('fails (transiently) when the map stays in use past the wait, and keeps the disks', async () => {
    const { host, untilDone } = setup({ probe: 'io-error' }, { openCountWaitMs: 2_000 });
    host.on(['dmsetup', 'message', 'mpathb', '0', 'fail_if_no_path'], () => ({}));
    const err = await untilDone().catch((e: unknown) => e);
    expect((err as Error).name).toBe('RunbookFailedError');
    expect((err as Error).message).toMatch(/still in use after 2000 ms \(open count 1\)/);
    expect(['dm-0', 'sdc', 'sdd'].map((d) => host.has(d))).toEqual([true, true, true]);
  });

  it('refuses when a VolumeAttachment of the node still claims the dead LUN, and changes nothing', async () => {
    const { host, handler } = setup({}, {}, new InMemoryAttachedVolumes({ 'worker-1': ['600140503b080d39e3f42d4a24115262'] }));
    const err = await handler(job, ctx('enforce')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join(' ')).toMatch(/not true that no VolumeAttachment of node worker-1 claims WWID/);
    expect(host.commands.some((c) => c[0] === 'multipath' && c[1] === '-f')).toBe(false);
    expect(host.has('dm-0')).toBe(true);
  });

  it('refuses a dead map a real process still has open', async () => {
    const { host, handler } = setup();
    host.put('/proc/4242/stat', '4242 (postgres) S 1 4242 4242 0 -1 4194560');
    host.put('/proc/4242/fd/9', { type: 'symlink', target: '/dev/mapper/mpathb' });
    host.put('/proc/4242/ns/mnt', { type: 'symlink', target: 'mnt:[4026531840]' });
    const err = await handler(job, ctx('enforce')).catch((e: unknown) => e);
    expect((err as RefusedError).reasons.join(' ')).toMatch(/live user\(s\): pid 4242 \(postgres, state S\)/);
  });

  it('refuses a dead map mounted in another mount namespace', async () => {
    const { host, handler } = setup();
    host.put('/proc/5000/ns/mnt', { type: 'symlink', target: 'mnt:[4026532999]' });
    host.put('/proc/5000/mountinfo', '900 800 253:0 / /var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/pvc-1/mount rw - ext4 /dev/mapper/mpathb rw\n');
    const err = await handler(job, ctx('enforce')).catch((e: unknown) => e);
    expect((err as RefusedError).reasons.join(' ')).toMatch(/mounted at \/var\/lib\/kubelet\/pods\/p.*4026532999/);
  });
});

describe('residual-multipath-cleanup in dry-run', () => {
  it('looks for real, plans, and changes nothing: every destructive command is only recorded', async () => {
    const { host, handler } = setup();
    const r = await handler(job, ctx('dry-run'));
    expect(r.outcome).toBe('planned');
    // The intent record was only simulated, so there is none to remove at the end.
    expect(r.steps.map((s) => s.status)).toEqual(['would-run', 'would-run', 'would-run', 'would-run', 'would-run', 'skipped-already-done']);
    // Enforce would first wait for a second look at the dead map; the dry-run says so.
    expect(r.steps[1]?.waitsFor).toMatch(/stayed dead over time.*enforce waits until/);
    // Looks ran on the node; the probe did not: the dead map queues I/O, and a probe of it would
    // be left stuck in D state, which a dry-run must not leave behind.
    expect(host.commands.map((c) => c.join(' '))).toEqual(expect.arrayContaining(['multipath -ll', 'dmsetup info -c']));
    expect(host.commands.some((c) => c[0] === 'dd')).toBe(false);
    expect(JSON.stringify(r.facts)).toContain('skipped-dry-run');
    // Changes did not.
    expect(host.commands.some((c) => (c[0] === 'multipath' && c[1] === '-f') || c[1] === 'message')).toBe(false);
    expect(host.calls.some((c) => c.op === 'writeSysfs')).toBe(false);
    const wouldRun = r.commands.filter((c) => c.exitCode === null && !c.timedOut).map((c) => c.argv.join(' '));
    expect(wouldRun.filter((c) => !c.includes('/var/lib/volume-medic/'))).toEqual([
      'dmsetup message mpathb 0 fail_if_no_path',
      'multipath -f mpathb',
      'host:write-sysfs /sys/block/sdd/device/delete 1',
      'host:write-sysfs /sys/block/sdc/device/delete 1',
    ]);
    // Its own bookkeeping is only simulated too.
    expect(host.calls.some((c) => c.op === 'writeFile')).toBe(false);
    expect(['dm-0', 'sdc', 'sdd'].map((d) => host.has(d))).toEqual([true, true, true]);
  });
});

describe('observe reads /dev/disk/by-id once per job, not once per map', () => {
  it('lists and resolves the links once, however many maps there are', async () => {
    const host = new FakeNode();
    let listings = 0;
    let readlinks = 0;
    const list = host.list.bind(host);
    const readlink = host.readlink.bind(host);
    host.list = async (dir) => {
      if (dir === '/dev/disk/by-id') listings++;
      return list(dir);
    };
    host.readlink = async (p) => {
      if (p.startsWith('/dev/disk/by-id/')) readlinks++;
      return readlink(p);
    };
    const links = (await list('/dev/disk/by-id')).length;
    const facts = await observe(job, host, {
      attached: new InMemoryAttachedVolumes({}, { known: false }),
      policy: DEFAULT_POLICY,
      ranOn: 'worker-1',
      now: () => new Date(),
      dryRun: true,
      stateDir: '/var/lib/volume-medic',
    });
    expect(facts.maps.length).toBe(2);
    expect(listings).toBe(1);
    expect(readlinks).toBe(links);
    expect(facts.maps.find((m) => m.name === 'mpathb')?.byIdLinks.length).toBeGreaterThan(0);
  });
});
