import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../../../../src/core/catalogue/result.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { ParkedError } from '../../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { InMemoryAttachedVolumes } from '../../../../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../../../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { intentPath } from '../../../../../workers/runbooks/residual-multipath-cleanup/intents.ts';
import type { ResidualPolicy } from '../../../../../workers/runbooks/residual-multipath-cleanup/policy.ts';
import { FakeNode } from './fake-node.ts';

// Issue 19 on the lab's real iscsi-lun-removed capture (a FakeNode answering with the captured
// output): each case where ambiguous evidence used to lead to a destructive step, and the
// positive control that must still be cleaned.

const STATE = '/var/lib/volume-medic';
const DEAD = '3600140503b080d39e3f42d4a24115262';
const POD_UID = '6b2f9c1e-4a8d-4e43-9f1b-2c7d5e8a9b10';
const POD_CGROUP = `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${POD_UID.replace(/-/g, '_')}.slice/cri-containerd-0a1b2c.scope`;

const jobFor = (n: number): ResidualMultipathJob => ({
  version: 1,
  key: `residual_worker-1_${n}`,
  runbook: 'residual-multipath-cleanup',
  target: { node: 'worker-1' },
  evidence: [{ source: 'k8s-event', summary: 'Node worker-1 has been rebooted', raw: {} }],
});
const ctx = (mode: Mode, n: number): RunbookContext => ({
  jobId: `residual_worker-1_${n}`,
  attempt: 1,
  mode,
  ranOn: 'worker-1',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

function node(opts: { policy?: Partial<ResidualPolicy>; attached?: InMemoryAttachedVolumes; host?: FakeNode } = {}) {
  const host = opts.host ?? new FakeNode();
  host.put('/proc/sys/kernel/random/boot_id', 'boot-1\n');
  const clock = { t: 0 };
  const handler = createResidualMultipathCleanup({
    host,
    stateDir: STATE,
    attached: opts.attached ?? new InMemoryAttachedVolumes(),
    policy: opts.policy ?? {},
    now: () => new Date(Date.UTC(2025, 11, 2) + clock.t),
    sleep: async (ms) => void (clock.t += ms),
  });
  /** The worker's loop: a job parked for maturing evidence runs again when its time comes. */
  const run = async (n: number, mode: Mode = 'enforce'): Promise<RunbookResult> => {
    for (let i = 0; ; i++) {
      try {
        return await handler(jobFor(n), ctx(mode, n));
      } catch (err) {
        if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || i > 3) throw err;
        clock.t = (err.parking.until as Date).getTime() - Date.UTC(2025, 11, 2);
      }
    }
  };
  return { host, handler, run, clock };
}

const destructive = (host: FakeNode): string[] =>
  host.commands
    .filter((c) => c[1] === 'message' || (c[0] === 'multipath' && c[1] === '-f'))
    .map((c) => c.join(' '))
    .concat(host.calls.filter((c) => c.op === 'writeSysfs').map((c) => `write-sysfs ${String(c.args[0])}`));

describe('openers of a dead map', () => {
  it('leaves a map alone whose opener is an application in D state, naming the process and its pod', async () => {
    const { host, run } = node();
    host.addOpener(4242, 'postgres', { state: 'D', cgroup: POD_CGROUP });
    const err = await run(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join(' ')).toMatch(new RegExp(`live user\\(s\\): pid 4242 \\(postgres, state D, pod UID ${POD_UID}\\)`));
    expect(destructive(host)).toEqual([]);
    // A held map is not even probed: a probe could only leave one more process stuck on it.
    expect(host.commands.some((c) => c[0] === 'dd')).toBe(false);
  });

  it('treats a known system name inside a pod as a user, not as the node’s own udev', async () => {
    const { host, run } = node();
    host.addOpener(4300, 'blkid', { cgroup: POD_CGROUP });
    const err = await run(1).catch((e: unknown) => e);
    expect((err as RefusedError).reasons.join(' ')).toMatch(/pid 4300 \(blkid, state D, pod UID/);
    expect(destructive(host)).toEqual([]);
  });

  it('leaves a map alone whose disk an application opened directly', async () => {
    const { host, run } = node();
    host.addOpener(4400, 'mysqld', { state: 'S', device: '/dev/sdc', cgroup: '0::/system.slice/mysql.service' });
    const err = await run(1).catch((e: unknown) => e);
    expect((err as RefusedError).reasons.join(' ')).toMatch(/pid 4400 \(mysqld, state S, cgroup 0::\/system.slice\/mysql.service\)/);
    expect(destructive(host)).toEqual([]);
  });

  it('cleans a map held only by victims of its dead paths: a udev worker and blkid in D state (positive control)', async () => {
    const { host, run } = node();
    host.addOpener(858, 'blkid');
    host.stuck.add(858);
    const r = await run(1);
    expect(r.outcome).toBe('succeeded');
    expect(destructive(host)).toEqual([
      'dmsetup message mpathb 0 fail_if_no_path',
      'multipath -f mpathb',
      'write-sysfs /sys/block/sdd/device/delete',
      'write-sysfs /sys/block/sdc/device/delete',
    ]);
    const flush = r.steps.find((s) => s.id.startsWith('flush-map'));
    expect(flush?.evidence?.find((e) => /known victim of the dead paths/.test(e.claim))?.detail).toMatch(/victims: pid 857 \(\(udev-worker\).*pid 858 \(blkid/);
  });
});

describe('what sits on a dead map without being a holder', () => {
  it.each([
    [
      'a loop device backed by it',
      '/sys/block/loop5/loop/backing_file',
      '/dev/dm-0\n',
      /no loop device is backed by mpathb \(\/sys\/block\/loop\*\/loop\/backing_file: backing loop5\)/,
    ],
    [
      'an iSCSI (LIO) backstore exporting it',
      '/sys/kernel/config/target/core/iblock_0/lun7/udev_path',
      '/dev/mapper/mpathb\n',
      /no iSCSI\/LIO target exports mpathb .*exported by iblock_0\/lun7/,
    ],
  ])('leaves it alone when %s, without probing it', async (_, path, content, reason) => {
    const { host, run } = node();
    host.put(path, content);
    const err = await run(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join(' ')).toMatch(reason);
    expect(destructive(host)).toEqual([]);
    expect(host.commands.some((c) => c[0] === 'dd')).toBe(false);
  });
});

describe('what cannot be known', () => {
  it('refuses in enforce when the node’s VolumeAttachments cannot be read, and probes nothing', async () => {
    const { host, run } = node({ attached: new InMemoryAttachedVolumes({}, { known: false }) });
    const err = await run(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join(' ')).toMatch(
      /no evidence that no VolumeAttachment of node worker-1 claims WWID 3600140503b080d39e3f42d4a24115262/,
    );
    expect(destructive(host)).toEqual([]);
    expect(host.commands.some((c) => c[0] === 'dd')).toBe(false);
  });

  it('never probes a dead map that is mounted, or held by a device on top', async () => {
    const mounted = node();
    mounted.host.put('/proc/5000/ns/mnt', { type: 'symlink', target: 'mnt:[4026532999]' });
    mounted.host.put('/proc/5000/mountinfo', '900 800 253:0 / /var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/pvc-1/mount rw - ext4 /dev/mapper/mpathb rw\n');
    expect(await mounted.run(1).catch((e: unknown) => e)).toBeInstanceOf(RefusedError);
    const held = node();
    held.host.put('/sys/block/dm-0/holders/dm-5', { type: 'symlink', target: '../../dm-5' });
    expect(await held.run(1).catch((e: unknown) => e)).toBeInstanceOf(RefusedError);
    for (const n of [mounted, held]) {
      expect(n.host.commands.some((c) => c[0] === 'dd')).toBe(false);
      expect(destructive(n.host)).toEqual([]);
    }
  });
});

describe('a transient all-paths-down', () => {
  it('never releases the queued I/O of a map whose paths come back within the grace period', async () => {
    const { host, handler, clock } = node();
    const first = await handler(jobFor(1), ctx('enforce', 1)).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ParkedError);
    // The storage comes back: the listing shows the paths active again.
    host.on(['multipath', '-ll'], () => ({
      stdout:
        "mpathb (3600140503b080d39e3f42d4a24115262) dm-0 LIO-ORG,FILEIO\nsize=64M features='1 queue_if_no_path' hwhandler='1 alua' wp=rw\n`-+- policy='service-time 0' prio=50 status=active\n  |- 3:0:0:1 sdd 8:48 active ready running\n  `- 2:0:0:1 sdc 8:32 active ready running\n",
    }));
    host.on(['multipathd', 'show', 'maps', 'json'], { exitCode: 1 });
    clock.t += 200_000;
    const second = await handler(jobFor(1), ctx('enforce', 1));
    expect(second.outcome).toBe('succeeded');
    expect(second.steps.filter((s) => s.destructive)).toEqual([]);
    expect(destructive(host)).toEqual([]);
    expect(host.has('dm-0')).toBe(true);
    // Its intent record is forgotten, and the next dead spell starts from zero.
    expect(await host.readFile(intentPath(STATE, DEAD))).toBeNull();
    expect(JSON.parse((await host.readFile(`${STATE}/observations/residual-multipath.json`)) ?? '{}').deadMaps).toEqual({});
  });
});

describe('an agent that died between flush and delete', () => {
  it('leaves an intent record, and the next job deletes the orphan disks and nothing else', async () => {
    const host = new FakeNode();
    const first = node({ host });
    // The agent is killed right after multipath -f: the first disk delete never happens.
    const writeSysfs = host.writeSysfs.bind(host);
    let killed = false;
    host.writeSysfs = async (path, value) => {
      if (!killed && path.endsWith('/device/delete')) {
        killed = true;
        throw new Error('SIGKILL');
      }
      return writeSysfs(path, value);
    };
    await expect(first.run(1)).rejects.toThrow(/SIGKILL/);
    expect(host.has('dm-0')).toBe(false);
    expect(['sdc', 'sdd'].map((d) => host.has(d))).toEqual([true, true]);
    const record = JSON.parse((await host.readFile(intentPath(STATE, DEAD))) ?? 'null');
    expect(record).toMatchObject({
      map: 'mpathb',
      wwid: DEAD,
      disks: [
        { name: 'sdd', hctl: '3:0:0:1' },
        { name: 'sdc', hctl: '2:0:0:1' },
      ],
    });
    expect(record.done.map((d: { step: string }) => d.step.split(':')[0])).toEqual(['release-queued-io', 'flush-map']);

    // A later job (another id: its journal knows nothing) finds the orphans through the record.
    const before = host.commands.length;
    const second = node({ host });
    const r = await second.run(2);
    expect(r.outcome).toBe('succeeded');
    expect(r.summary).toMatch(/delete disk\(s\) sdd, sdc left behind by an interrupted cleanup/);
    const ran = host.commands.slice(before).filter((c) => c[1] === 'message' || c[1] === '-f');
    expect(ran).toEqual([]);
    expect(
      host.calls
        .filter((c) => c.op === 'writeSysfs')
        .map((c) => c.args[0])
        .slice(-2),
    ).toEqual(['/sys/block/sdd/device/delete', '/sys/block/sdc/device/delete']);
    expect(['sdc', 'sdd'].map((d) => host.has(d))).toEqual([false, false]);
    expect(['dm-1', 'sda', 'sdb'].map((d) => host.has(d))).toEqual([true, true, true]);
    expect(await host.readFile(intentPath(STATE, DEAD))).toBeNull();
    const del = r.steps.find((s) => s.id.startsWith('delete-disk:sdd'));
    expect(del?.evidence?.map((e) => e.claim)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/an intent record of job residual_worker-1_1 .* names sdd/),
        'the map of WWID 3600140503b080d39e3f42d4a24115262 is gone',
      ]),
    );
  });

  it('leaves an orphan disk alone when a new map claims it', async () => {
    const host = new FakeNode();
    const first = node({ host });
    const writeSysfs = host.writeSysfs.bind(host);
    host.writeSysfs = async (path, value) => {
      if (path.endsWith('/device/delete')) throw new Error('SIGKILL');
      return writeSysfs(path, value);
    };
    await expect(first.run(1)).rejects.toThrow(/SIGKILL/);
    host.writeSysfs = writeSysfs;
    host.put('/sys/block/sdc/holders/dm-7', { type: 'symlink', target: '../../dm-7' });
    const err = await node({ host })
      .run(2)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join(' ')).toMatch(/orphan disk\(s\) of mpathb .* sdc: not true that nothing holds sdc \(no new map claims it\)/);
    expect(host.has('sdc')).toBe(true);
    expect(host.has('sdd')).toBe(true);
  });
});
