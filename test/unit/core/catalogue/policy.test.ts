import { describe, expect, it } from 'vitest';
import { RUNBOOKS } from '../../../../src/core/catalogue/jobs.ts';
import { RUNBOOK_POLICY } from '../../../../src/core/catalogue/policy.ts';

describe('runbook policy', () => {
  it("gives every runbook that shares a queue the same dedup window (BullMQ trims a queue by the finishing job's age)", () => {
    for (const placement of ['node', 'cluster'] as const) {
      const windows = new Set(RUNBOOKS.filter((r) => RUNBOOK_POLICY[r].placement === placement).map((r) => RUNBOOK_POLICY[r].dedupWindowMs));
      expect(windows.size, `${placement} queues`).toBeLessThanOrEqual(1);
    }
  });

  it('retries every runbook at least once, with jitter, and a backoff', () => {
    for (const r of RUNBOOKS) {
      expect(RUNBOOK_POLICY[r].attempts).toBeGreaterThan(1);
      expect(RUNBOOK_POLICY[r].jitter).toBeGreaterThan(0);
      expect(RUNBOOK_POLICY[r].backoffMs).toBeGreaterThan(0);
    }
  });
});
