import { describe, expect, it } from 'vitest';
import { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';

// Who asks for a placeholder's release is part of the job (issue 19): a detector's release is
// verified on the node, an operator's must carry force. Jobs stored before the field existed
// must still parse, and are a detector's (observe.ts defaults them), never a forced one.

const release = {
  version: 1,
  runbook: 'local-pv-placeholder',
  key: 'lpv-release_local-pv-1_0123456789ab',
  target: { node: 'worker-1', pv: 'local-pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
  action: 'release',
  evidence: [{ source: 'npd', summary: 'LocalDiskLost cleared', raw: {} }],
} as const;

const parses = (job: unknown): boolean => RemediationJob.safeParse(job).success;

describe('a placeholder release job', () => {
  it('still parses when it was stored before anyone said who asks (a detector’s, verified)', () => {
    const parsed = RemediationJob.parse(release);
    expect(parsed).not.toHaveProperty('release');
  });

  it('parses a detector’s release without force and an operator’s with force', () => {
    expect(parses({ ...release, release: { by: 'detector', force: false } })).toBe(true);
    expect(parses({ ...release, release: { by: 'operator', force: true } })).toBe(true);
  });

  it('rejects an operator’s release without force, saying force is needed', () => {
    const r = RemediationJob.safeParse({ ...release, release: { by: 'operator', force: false } });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(/must carry force: true/);
  });

  it('rejects force on a detector’s release: only an operator may skip the disk check', () => {
    expect(parses({ ...release, release: { by: 'detector', force: true } })).toBe(false);
  });

  it('rejects a release field on a place job', () => {
    expect(parses({ ...release, action: 'place', release: { by: 'detector', force: false } })).toBe(false);
  });
});
