import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../../../../workers/runbooks/readonly-filesystem-recovery/policy.ts';
import { verify } from '../../../../../workers/runbooks/readonly-filesystem-recovery/verify.ts';
import { STAGING } from './facts.fixture.ts';
import { fakeNode } from './fake-node.ts';

// The verify on a 6.1 kernel: a stopped ext4 shows rw in mountinfo, and Linux gives a new mount the
// lowest free mount id, so the remounted staging mount can carry the stopped one's id. Only the
// kernel's `mounted filesystem` line after the stop tells the new instance from the old.

const STOPPED_AT = '2026-12-07T09:50:00.300Z';
const target = { device: 'dm-0', majorMinor: '253:0', deletedUids: ['7c1e9a52-3d4b-4f6e-8a9b-0c1d2e3f4a5b'], stoppedMountIds: [300], stoppedAt: STOPPED_AT };
const remountedSameId = `25 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw\n300 25 253:0 / ${STAGING} rw,relatime - ext4 /dev/mapper/mpatha rw,errors=remount-ro\n`;

function setup() {
  const host = fakeNode();
  host.put('/proc/1/mountinfo', remountedSameId);
  host.put('/sys/fs/ext4/dm-0/errors_count', '0\n');
  const clock = { t: 0 };
  const deps = { policy: { ...DEFAULT_POLICY, verifyMs: 10_000, verifyPollMs: 5_000 }, now: () => clock.t, sleep: async (ms: number) => void (clock.t += ms) };
  return { host, deps };
}

describe('readonly-filesystem-recovery verify, with mount ids reused', () => {
  it("takes a mount with the stopped one's id for the new one when the kernel logged a mount of the device after the stop", async () => {
    const { host, deps } = setup();
    host.on(['journalctl'], {
      stdout: JSON.stringify({
        __REALTIME_TIMESTAMP: '1796637100000000',
        _BOOT_ID: '0d4b3a2c1e0f4a5b9c8d7e6f5a4b3c2d',
        MESSAGE: 'EXT4-fs (dm-0): mounted filesystem with ordered data mode. Quota mode: none.',
      }),
    });
    const v = await verify(host, [target], deps);
    expect(v.ok).toBe(true);
    expect(v.checks.map((c) => c.what)).toEqual([
      'no stopped mount of dm-0 (253:0) is left',
      'dm-0 is mounted again with super options rw',
      'dm-0 records no error (errors_count 0)',
    ]);
  });

  it('keeps looking, then fails, while the stopped mount is still there (no mount of the device logged after the stop)', async () => {
    const { host, deps } = setup();
    const v = await verify(host, [target], deps);
    expect(v.ok).toBe(false);
    expect(v.checks).toMatchObject([{ what: 'no stopped mount of dm-0 (253:0) is left', ok: false }]);
  });
});
