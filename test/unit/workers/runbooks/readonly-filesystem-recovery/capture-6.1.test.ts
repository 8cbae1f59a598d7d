import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseMountinfo } from '../../../../../workers/host/mountinfo.ts';
import { parseDumpe2fsHeader } from '../../../../../workers/runbooks/readonly-filesystem-recovery/dumpe2fs.ts';
import { classifyKernelMessage } from '../../../../../workers/runbooks/readonly-filesystem-recovery/kernel-fs-lines.ts';
import { kubeletMountOf, superStopped } from '../../../../../workers/runbooks/readonly-filesystem-recovery/kubelet-mounts.ts';
import { plan } from '../../../../../workers/runbooks/readonly-filesystem-recovery/plan.ts';
import { device, facts } from './facts.fixture.ts';

// The lab's capture on Debian 12's kernel (6.1.0-57): ext4 with errors=remount-ro stopped after
// every path of its multipath map died (test/lab/readonly-filesystem-recovery.lab.test.ts).

const fixture = (name: string): string => readFileSync(new URL(`../../../../fixtures/host/ext4-error-remount-ro-6.1/${name}`, import.meta.url), 'utf8');
const KUBELET = '/var/lib/kubelet';

describe('the 6.1 capture of a stopped ext4', () => {
  const mounts = parseMountinfo(fixture('mountinfo.after-error.txt')).flatMap((e) => kubeletMountOf(KUBELET, e) ?? []);
  const kernel = fixture('dmesg.txt')
    .split('\n')
    .map((l) => l.replace(/^\[\s*[\d.]+\]\s*/, ''))
    .flatMap((m) => {
      const c = classifyKernelMessage(m);
      return c ? [{ ...c, message: m }] : [];
    });

  it('shows the kernel-stopped file system as rw in both option lists of both kubelet mounts', () => {
    expect(mounts.map((m) => m.role)).toEqual(['staging', 'publish']);
    for (const m of mounts) {
      expect(m.mountOptions).toContain('rw');
      expect(m.superOptions).toContain('rw');
      expect(superStopped(m.superOptions)).toBe(false);
    }
  });

  it("has the kernel's lines: the path loss, the journal abort, the error and the read-only remount of dm-0", () => {
    const kinds = new Set(kernel.filter((l) => l.device === 'dm-0').map((l) => l.kind));
    for (const k of ['ext4-mounted', 'block-io-error', 'buffer-io-error', 'journal-aborted', 'ext4-error', 'ext4-remount-ro'] as const)
      expect(kinds).toContain(k);
  });

  it('counts the errors in sysfs, and dumpe2fs reads clean with errors once the paths are back and clean after e2fsck -p', () => {
    expect(fixture('sysfs-ext4-errors.txt')).toMatch(/^errors_count:2$/m);
    expect(fixture('sysfs-ext4-errors.txt')).toMatch(/errors=remount-ro/);
    expect(parseDumpe2fsHeader(fixture('dumpe2fs-h.after-paths-back.txt'))).toMatchObject({ state: 'clean with errors', hasErrors: true, errorCount: 2 });
    expect(parseDumpe2fsHeader(fixture('dumpe2fs-h.after-fsck.txt'))).toMatchObject({ state: 'clean', clean: true, errorCount: 0 });
    expect(fixture('e2fsck-p.txt')).toMatch(/^exit 1\n/);
  });

  it('plans delete-pod for these mounts from the kernel line, though mountinfo says rw', () => {
    const d = device();
    // dmesg's times are seconds since boot: in order, one second apart, is all the plan needs.
    const at = (i: number) => new Date(Date.UTC(2026, 11, 7, 11, 16) + i * 1000).toISOString();
    const lines = kernel.filter((l) => l.device === 'dm-0').map((l, i) => ({ ...l, at: at(i), bootId: 'b1' }));
    const p = plan(
      facts(
        {},
        {
          mounts: mounts.map((m) => ({ ...m, ...(m.podUid ? { podUid: d.pods[0]!.uid } : {}) })),
          kernel: { ok: true, lines, mountedAt: lines.find((l) => l.kind === 'ext4-mounted')!.at, truncated: false },
        },
      ),
      { pathsBackMs: 120_000 },
    );
    expect(p.kind).toBe('steps');
  });
});
