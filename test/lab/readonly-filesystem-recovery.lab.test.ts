// readonly-filesystem-recovery on a real kernel (docs/decisions/0008 §3.7): Debian 12's 6.1 kernel
// under qemu, ext4 mounted with errors=remount-ro on a scsi_debug multipath map with
// `no_path_retry fail`, at a kubelet-like CSI staging path with a pod's bind mount. Every path
// fails, a write with fsync gets EIO and the kernel stops the file system. The real runbook, acting
// on the guest: it parks (paths-still-dead) while the paths are dead; once they are back and have
// stayed back it plans delete-pod against a recording fake of the Kubernetes write port, and the
// job parks for approval with no delete. The test then does what kubelet and the CSI driver would
// (unmount both, `e2fsck -p`, mount again for a new pod) and the runbook's verify reports the
// file system rw and clean.
// LAB_WRITE_FIXTURES=1 writes the kernel's view of the stopped file system to
// test/fixtures/host/ext4-error-remount-ro-6.1/ (commit them).
import { mkdirSync, writeFileSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryLookups } from '../../src/adapters/kube/lookups.ts';
import type { ReadonlyFilesystemRecoveryJob } from '../../src/core/catalogue/jobs.ts';
import type { Mode } from '../../src/core/catalogue/result.ts';
import { GO, isHighRisk, ParkedError, type StepGate } from '../../workers/engine/gate.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import type { Host } from '../../workers/host/host.ts';
import type { DeletePodRequest, KubeWrites, StepEvent } from '../../workers/kube-writes/kube-writes.ts';
import { createReadonlyFilesystemRecovery } from '../../workers/runbooks/readonly-filesystem-recovery/handler.ts';
import { DEFAULT_POLICY } from '../../workers/runbooks/readonly-filesystem-recovery/policy.ts';
import { verify } from '../../workers/runbooks/readonly-filesystem-recovery/verify.ts';
import { guestHost } from './guest-host.ts';
import { waitInGuest } from './guest-wait.ts';
import { labSkipReason } from './image.ts';
import { createScsiDebugMap, failPaths, type GuestMap, restorePaths } from './scsi-debug-scenario.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (readonly-filesystem-recovery): ${skipReason} ***\n`);

const STATE_DIR = '/var/lib/volume-medic';
const KUBELET = '/var/lib/kubelet';
const STAGING = `${KUBELET}/plugins/kubernetes.io/csi/driver.example.com/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/globalmount`;
const UID = '7c1e9a52-3d4b-4f6e-8a9b-0c1d2e3f4a5b';
const NEW_UID = '0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e';
const publish = (uid: string): string => `${KUBELET}/pods/${uid}/volumes/kubernetes.io~csi/pvc-lab/mount`;
/** The lab's "paths back for long enough": a second look is still needed, TCG is slow. */
const PATHS_BACK_MS = 3_000;
const FIXTURE_DIR = new URL('../fixtures/host/ext4-error-remount-ro-6.1/', import.meta.url);
const timings: Record<string, string> = {};
const log = (line: string) => console.log(line);

const job: ReadonlyFilesystemRecoveryJob = {
  version: 1,
  key: 'readonly_lab_1',
  runbook: 'readonly-filesystem-recovery',
  target: { node: 'lab-node' },
  evidence: [{ source: 'api', summary: 'lab', raw: {} }],
};

const approvalGate: StepGate = {
  beforeStep: async (step) => (isHighRisk(step) ? { go: false, park: { reason: 'approval', why: 'high-risk step waits for approval' } } : GO),
};

const ctx = (mode: Mode): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn: 'lab-node',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
  gate: approvalGate,
});

/** The write port as a recording fake: a parked job must leave it empty. */
class RecordingKubeWrites implements KubeWrites {
  readonly calls: Array<DeletePodRequest | StepEvent | string> = [];
  async deletePod(r: DeletePodRequest): Promise<boolean> {
    this.calls.push(r);
    return true;
  }
  async patchNodeTaints(): Promise<void> {
    this.calls.push('patch-node');
  }
  async event(e: StepEvent): Promise<void> {
    this.calls.push(e);
  }
}

/**
 * The snapshot of guest-host.ts covers what the other runbooks read; this one also reads ext4's
 * error counters and /sys/dev/block's links, asked of the guest one by one.
 */
function withExt4Reads(vm: LabVm, inner: Host): Host {
  const asked = (p: string) => p.startsWith('/sys/fs/ext4/') || p.startsWith('/proc/fs/ext4/');
  return {
    ...inner,
    async readFile(p) {
      if (!asked(p)) return inner.readFile(p);
      const r = await vm.run(['cat', p]);
      return r.code === 0 ? r.stdout : null;
    },
    async readlink(p) {
      if (!p.startsWith('/sys/dev/block/')) return inner.readlink(p);
      const r = await vm.run(['readlink', p]);
      return r.code === 0 ? r.stdout.trim() : null;
    },
  };
}

/** Runs the job as the node agent would: parked for maturing evidence, it runs again once it can have matured. */
async function untilNotEvidence(handler: ReturnType<typeof createReadonlyFilesystemRecovery>): Promise<{ err: unknown; waited: string[] }> {
  const waited: string[] = [];
  for (let i = 0; i < 4; i++) {
    try {
      return { err: await handler(job, ctx('enforce')), waited };
    } catch (err) {
      if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence') return { err, waited };
      waited.push(err.parking.why);
      await new Promise((r) => setTimeout(r, Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 200));
    }
  }
  throw new Error(`still waiting for evidence after 4 looks: ${waited.join(' | ')}`);
}

describe.skipIf(skipReason !== null)('readonly-filesystem-recovery on a real kernel (ext4 errors=remount-ro on dm-multipath)', () => {
  let vm: LabVm;
  let map: GuestMap;
  let majorMinor: string;
  let stoppedMountIds: number[] = [];
  /** When the kernel stopped it, as the plan's step says. */
  let stoppedAt: string | null = null;
  const kube = new RecordingKubeWrites();
  const stats = { snapshots: 0, commands: 0 };
  let host: Host;
  const captured: Record<string, string> = {};
  let handler: ReturnType<typeof createReadonlyFilesystemRecovery>;

  beforeAll(async () => {
    vm = await bootLabVm({ log });
    timings['boot to ready'] = `${vm.bootMs} ms`;
    const t = performance.now();
    // Fail at once when every path is gone (no queueing): the write gets EIO and ext4 stops.
    await vm.runOk(`printf 'overrides {\\n\\tno_path_retry fail\\n}\\n' >> /etc/multipath.conf && multipathd reconfigure`);
    map = await createScsiDebugMap(vm);
    majorMinor = (await vm.runOk(['cat', `/sys/block/${map.dm}/dev`])).stdout.trim();
    await vm.runOk(
      [
        'set -e',
        `mkfs.ext4 -q -F /dev/mapper/${map.name}`,
        `mkdir -p ${STAGING} ${publish(UID)}`,
        `mount -o errors=remount-ro /dev/mapper/${map.name} ${STAGING}`,
        `mount --bind ${STAGING} ${publish(UID)}`,
        `echo data > ${publish(UID)}/file`,
        'sync',
      ].join('\n'),
    );
    timings['map, ext4, kubelet-like mounts'] = `${Math.round(performance.now() - t)} ms`;
    const lookups = new InMemoryLookups([
      {
        name: 'pvc-lab',
        volumeMode: 'Filesystem',
        accessModes: ['ReadWriteOnce'],
        claim: { namespace: 'shop', name: 'data-db-0' },
        csi: { driver: 'driver.example.com', volumeHandle: 'lab-1', attributes: {} },
      },
    ]).addPod({
      namespace: 'shop',
      name: 'db-0',
      uid: UID,
      node: 'lab-node',
      phase: 'Running',
      claims: ['data-db-0'],
      waiting: [],
      controller: { kind: 'StatefulSet', name: 'db' },
      resourceVersion: '4711',
    });
    host = withExt4Reads(vm, guestHost(vm, stats, STATE_DIR));
    handler = createReadonlyFilesystemRecovery({
      host,
      kube,
      lookups,
      stateDir: STATE_DIR,
      policy: { kubeletRoot: KUBELET, pathsBackMs: PATHS_BACK_MS, probeTimeoutMs: 3_000, verifyMs: 30_000, verifyPollMs: 1_000 },
    });
  }, 10 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    if (process.env['LAB_WRITE_FIXTURES'] === '1' && Object.keys(captured).length) {
      mkdirSync(FIXTURE_DIR, { recursive: true });
      for (const [name, text] of Object.entries(captured)) writeFileSync(new URL(name, FIXTURE_DIR), text);
      log(`[readonly-lab] wrote ${Object.keys(captured).join(', ')} to ${FIXTURE_DIR.pathname}`);
    }
    console.log(
      `\nreadonly-filesystem-recovery lab timings:\n${Object.entries(timings)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n  guest snapshots ${stats.snapshots}, commands ${stats.commands}\n`,
    );
  });

  it(
    'a write with fsync after every path died gets EIO, and the kernel stops the file system while both option lists of its mounts may stay rw',
    async () => {
      await failPaths(vm, map.paths);
      const write = await vm.run(['dd', 'if=/dev/zero', `of=${publish(UID)}/after-loss`, 'bs=4096', 'count=16', 'conv=fsync'], { timeoutMs: 60_000 });
      log(`[readonly-lab] dd after path loss: exit ${write.code}: ${write.stderr.trim()}`);
      expect(write.code).not.toBe(0);
      // The journal's commit is what fails and aborts the journal; make it happen now rather than at the next commit interval.
      await vm.run(['sync'], { timeoutMs: 30_000 });
      expect(write.stderr).toMatch(/Input\/output error|Read-only file system/);
      // The aborted journal is noticed at the next journal start (an application writing on): then ext4 errors and stops the file system.
      const touch = await vm.run(['touch', `${publish(UID)}/next-write`], { timeoutMs: 30_000 });
      log(`[readonly-lab] the next write: exit ${touch.code}: ${touch.stderr.trim()}`);
      expect(touch.stderr).toMatch(/Read-only file system|Input\/output error/);
      await waitInGuest(vm, "the kernel's read-only remount", ['dmesg'], (out) => out.includes(`EXT4-fs (${map.dm}): Remounting filesystem read-only`));
      // What mountinfo shows of it depends on the kernel: older ones set ro on the super block, newer
      // ones add emergency_ro, Debian 12's 6.1 showed neither (both option lists stay rw).
      const mountinfo = (await vm.runOk(['grep', KUBELET, '/proc/1/mountinfo'])).stdout;
      stoppedMountIds = mountinfo
        .split('\n')
        .filter(Boolean)
        .map((l) => Number(l.split(' ')[0]));
      expect(stoppedMountIds).toHaveLength(2);
      for (const line of mountinfo.split('\n').filter(Boolean)) {
        const [, mountOptions] = line.split(' ').slice(4);
        expect(mountOptions?.split(',')).toContain('rw');
      }
      log(
        `[readonly-lab] super options after the stop: ${mountinfo
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' - ')[1])
          .join(' | ')}`,
      );
      captured['mountinfo.after-error.txt'] = mountinfo;
      captured['dmesg.txt'] =
        (await vm.run(['dmesg'])).stdout
          .split('\n')
          .filter((l) => /EXT4-fs|I\/O error|Buffer I\/O|Aborting journal|JBD2|device-mapper: multipath/.test(l))
          .join('\n') + '\n';
      const journal = await vm.run(['journalctl', '-k', '-o', 'json', '--no-pager', '--boot']);
      captured['journalctl-k.txt'] = `exit ${journal.code}\n${journal.stderr}${journal.stdout.slice(0, 20_000)}`;
      const sysfs = await vm.run(
        `cd /sys/fs/ext4/${map.dm} && grep -H . errors_count first_error_time last_error_time; grep -H . /proc/fs/ext4/${map.dm}/options`,
      );
      captured['sysfs-ext4-errors.txt'] = sysfs.stdout;
      log(`[readonly-lab] ${mountinfo}${captured['dmesg.txt']}${sysfs.stdout}journalctl: exit ${journal.code} ${journal.stderr.trim()}`);
      expect(sysfs.stdout).toMatch(/errors_count:[1-9]/);
      expect(captured['dmesg.txt']).toMatch(new RegExp(`EXT4-fs \\(${map.dm}\\): Remounting filesystem read-only`));
    },
    3 * 60_000,
  );

  it(
    'parks while the paths are dead (paths-still-dead), reading nothing from the device and writing nothing to the API',
    async () => {
      const before = stats.commands;
      const t = performance.now();
      const err = await handler(job, ctx('enforce')).catch((e: unknown) => e);
      timings['look while dead'] = `${Math.round(performance.now() - t)} ms`;
      expect(err).toBeInstanceOf(ParkedError);
      const parked = err as ParkedError;
      expect(parked.parking.reason).toBe('evidence');
      expect(parked.parking.why).toMatch(/^paths-still-dead: /);
      expect(stats.commands).toBeGreaterThan(before);
      expect(parked.result.commands.some((c) => c.argv[0] === 'dd')).toBe(false);
      expect(kube.calls).toEqual([]);
    },
    3 * 60_000,
  );

  it(
    'after the paths return and stay back, plans delete-pod for the controller-owned pod and parks for approval: no delete',
    async () => {
      await restorePaths(vm, map.paths);
      captured['dumpe2fs-h.after-paths-back.txt'] = (await vm.run(['dumpe2fs', '-h', `/dev/mapper/${map.name}`])).stdout;
      log(
        `[readonly-lab] dumpe2fs -h after the paths came back:\n${captured['dumpe2fs-h.after-paths-back.txt']
          ?.split('\n')
          .filter((l) => /state|error/i.test(l))
          .join('\n')}`,
      );
      const t = performance.now();
      const { err, waited } = await untilNotEvidence(handler);
      timings['paths back -> parked for approval'] = `${Math.round(performance.now() - t)} ms`;
      log(`[readonly-lab] waited: ${waited.join(' | ')}`);
      expect(waited.some((w) => w.includes('waits for evidence to mature'))).toBe(true);
      expect(err).toBeInstanceOf(ParkedError);
      const parked = err as ParkedError;
      expect(parked.parking.reason).toBe('approval');
      expect(parked.plan.steps.map((s) => s.id)).toEqual([`delete-pod:shop/db-0:${UID}`]);
      stoppedAt = (parked.plan.steps[0] as { stoppedAt?: string | null }).stoppedAt ?? null;
      expect(stoppedAt).not.toBeNull();
      const step = parked.plan.steps[0];
      expect(step?.evidence?.map((e) => e.status)).toEqual(step?.evidence?.map(() => 'holds'));
      expect(JSON.stringify(parked.result.commands.map((c) => c.argv))).not.toMatch(/remount|e2fsck|"mount"/);
      expect(kube.calls).toEqual([]);
    },
    5 * 60_000,
  );

  it(
    'once kubelet and the CSI driver unstage, check and mount it again, the verify reports rw and a clean file system',
    async () => {
      await vm.runOk(`umount ${publish(UID)} && umount ${STAGING}`);
      const fsck = await vm.run(['e2fsck', '-p', `/dev/mapper/${map.name}`], { timeoutMs: 120_000 });
      log(`[readonly-lab] e2fsck -p: exit ${fsck.code}: ${fsck.stdout.trim()} ${fsck.stderr.trim()}`);
      expect([0, 1]).toContain(fsck.code);
      captured['e2fsck-p.txt'] = `exit ${fsck.code}\n${fsck.stdout}${fsck.stderr}`;
      await vm.runOk(
        `set -e; mkdir -p ${publish(NEW_UID)}; mount -o errors=remount-ro /dev/mapper/${map.name} ${STAGING}; mount --bind ${STAGING} ${publish(NEW_UID)}`,
      );
      captured['dumpe2fs-h.after-fsck.txt'] = (await vm.run(['dumpe2fs', '-h', `/dev/mapper/${map.name}`])).stdout;
      const result = await verify(host, [{ device: map.dm, majorMinor, deletedUids: [UID], stoppedMountIds, stoppedAt }], {
        policy: { ...DEFAULT_POLICY, kubeletRoot: KUBELET, verifyMs: 30_000, verifyPollMs: 1_000 },
        now: () => Date.now(),
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      });
      log(`[readonly-lab] verify: ${JSON.stringify(result.checks)}`);
      expect(result.ok).toBe(true);
      expect(result.checks.map((c) => c.what)).toEqual([
        `no stopped mount of ${map.dm} (${majorMinor}) is left`,
        `${map.dm} is mounted again with super options rw`,
        expect.stringMatching(new RegExp(`^${map.dm} (records no error|'s file system state is clean)`)),
      ]);
      expect(await vm.run(['cat', `${publish(NEW_UID)}/file`])).toMatchObject({ code: 0, stdout: 'data\n' });
      expect(kube.calls).toEqual([]);
    },
    5 * 60_000,
  );
});
