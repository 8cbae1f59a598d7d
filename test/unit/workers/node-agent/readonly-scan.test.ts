import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ReadonlyFilesystemRecoveryJob, type RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { startReadonlyScan, stoppedFileSystemJobs } from '../../../../workers/node-agent/readonly-scan.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';

const KUBELET = '/var/lib/kubelet';
const STAGING = `${KUBELET}/plugins/kubernetes.io/csi/driver.example.com/0f4c1b9e/globalmount`;
const PUBLISH = `${KUBELET}/pods/7c1e9a52-3d4b-4f6e-8a9b-0c1d2e3f4a5b/volumes/kubernetes.io~csi/pvc-1/mount`;

function node(lines: string[]): FakeHost {
  return new FakeHost({
    '/proc/1/mountinfo': `${lines.join('\n')}\n`,
    '/proc/sys/kernel/random/boot_id': '0d4b3a2c-1e0f-4a5b-9c8d-7e6f5a4b3c2d\n',
    '/sys/dev/block/253:0': { type: 'symlink', target: '../../devices/virtual/block/dm-0' },
    '/sys/dev/block/253:1': { type: 'symlink', target: '../../devices/virtual/block/dm-1' },
  });
}

describe("the node agent's scan for PV file systems the kernel stopped", () => {
  it('asks for one job per device whose kubelet mounts say rw while the super block says ro or emergency_ro', async () => {
    const host = node([
      '25 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw',
      `300 25 253:0 / ${STAGING} rw,relatime - ext4 /dev/mapper/mpatha ro,errors=remount-ro`,
      `301 25 253:0 / ${PUBLISH} rw,relatime - ext4 /dev/mapper/mpatha ro,errors=remount-ro`,
      `302 25 253:1 / ${STAGING.replace('0f4c1b9e', 'aa11bb22')} rw,relatime - ext4 /dev/mapper/mpathb rw,errors=remount-ro,emergency_ro`,
    ]);
    const jobs = await stoppedFileSystemJobs(host, 'worker-1', KUBELET);
    expect(jobs.map((j) => j.target)).toEqual([
      { node: 'worker-1', device: 'dm-0' },
      { node: 'worker-1', device: 'dm-1' },
    ]);
    for (const j of jobs) expect(ReadonlyFilesystemRecoveryJob.safeParse(j).success).toBe(true);
    expect(jobs[0]?.bootId).toBe('0d4b3a2c-1e0f-4a5b-9c8d-7e6f5a4b3c2d');
    // The same device in the same boot is the same job.
    expect((await stoppedFileSystemJobs(host, 'worker-1', KUBELET))[0]?.key).toBe(jobs[0]?.key);
  });

  it("leaves alone what was asked to be read-only, the node's own file systems, healthy mounts and mounts outside kubelet", async () => {
    const host = node([
      '25 1 253:0 / / rw,relatime - ext4 /dev/mapper/root ro,errors=remount-ro',
      `300 25 253:0 / ${STAGING} ro,relatime - ext4 /dev/mapper/mpatha ro,errors=remount-ro`,
      `301 25 253:1 / ${PUBLISH} rw,relatime - ext4 /dev/mapper/mpathb rw,errors=remount-ro`,
      '302 25 253:1 / /mnt/data rw,relatime - ext4 /dev/mapper/mpathb ro',
    ]);
    expect(await stoppedFileSystemJobs(host, 'worker-1', KUBELET)).toEqual([]);
  });

  it('also asks for a device whose ext4 counts errors while mountinfo shows rw (a 6.1 kernel shows its stop nowhere else)', async () => {
    const host = node([`300 25 253:0 / ${STAGING} rw,relatime - ext4 /dev/mapper/mpatha rw,errors=remount-ro`]);
    expect(await stoppedFileSystemJobs(host, 'worker-1', KUBELET)).toEqual([]);
    host.put('/sys/fs/ext4/dm-0/errors_count', '2\n');
    const [job] = await stoppedFileSystemJobs(host, 'worker-1', KUBELET);
    expect(job?.target).toEqual({ node: 'worker-1', device: 'dm-0' });
    expect(job?.evidence[0]?.summary).toContain('ext4 errors_count 2');
  });

  it('enqueues what it finds at each interval, and nothing when the interval is 0', async () => {
    const host = node([`300 25 253:0 / ${STAGING} rw,relatime - ext4 /dev/mapper/mpatha ro,errors=remount-ro`]);
    const stored: RemediationJob[] = [];
    let tick = (): void => {};
    const scan = startReadonlyScan({
      node: 'worker-1',
      host,
      kubeletRoot: KUBELET,
      enqueue: async (jobs) => stored.push(...jobs),
      intervalMs: 60_000,
      log: pino({ level: 'silent' }),
      every: (_ms, t) => {
        tick = t;
        return () => {};
      },
    });
    tick();
    await scan.stop();
    expect(stored.map((j) => j.runbook)).toEqual(['readonly-filesystem-recovery']);
    const never = startReadonlyScan({ node: 'worker-1', host, kubeletRoot: KUBELET, enqueue: async () => 0, intervalMs: 0, log: pino({ level: 'silent' }) });
    await never.stop();
  });
});
