import { describe, expect, it } from 'vitest';
import { JOB_ID, idempotencyKey } from '../../../../src/core/catalogue/idempotency-keys.ts';

describe('idempotency keys', () => {
  it('are the same for the same identity and differ for another', () => {
    expect(idempotencyKey('residual', ['worker-1', 'alert', 'fp1', '2026-12-01T03:12:44.512Z'])).toBe(
      idempotencyKey('residual', ['worker-1', 'alert', 'fp1', '2026-12-01T03:12:44.512Z']),
    );
    expect(idempotencyKey('residual', ['worker-1', 'alert', 'fp1', '2026-12-01T03:12:44.512Z'])).not.toBe(
      idempotencyKey('residual', ['worker-1', 'alert', 'fp1', '2026-12-02T03:12:44.512Z']),
    );
  });

  it('stay distinct when sanitising makes the readable parts equal', () => {
    const a = idempotencyKey('lpv', ['pv', '/dev/disk/by-id/wwn-0x1:2']);
    const b = idempotencyKey('lpv', ['pv', '/dev/disk/by-id/wwn-0x1/2']);
    expect(a).not.toBe(b);
  });

  it('are valid BullMQ job ids: no colon, not an integer, bounded length', () => {
    for (const parts of [['a:b:c'], ['1234'], ['x'.repeat(1000)], [''], ['../../etc'], ['sdb; rm -rf /']]) {
      const key = idempotencyKey('rbd', parts);
      expect(key).toMatch(JOB_ID);
      expect(key).not.toContain(':');
      expect(key.length).toBeLessThanOrEqual(200);
    }
  });

  it('do not change between releases', () => {
    // A changed key would let a repeat that arrives after an upgrade become a second job (and a
    // second run of a destructive runbook). Change these only with a migration note.
    expect(idempotencyKey('residual', ['worker-1', 'alert', 'fp1', '2026-12-01T03:12:44.512Z'])).toBe(
      'residual_worker-1_alert_fp1_2026-12-01T03-12-44.512Z_8713db7ca4d5',
    );
    expect(idempotencyKey('rbd', ['x'.repeat(300)])).toBe(`rbd_${'x'.repeat(120)}_8c13a1b2ea8b`);
  });
});
