import { describe, expect, it } from 'vitest';
import { effectiveMode } from '../../../../src/core/controls/effective-mode.ts';
import type { ModeOverride } from '../../../../src/core/controls/records.ts';

const o = (mode: 'dry-run' | 'enforce', by = 'alice'): ModeOverride => ({ mode, by, why: 'INC-7', at: '2026-12-01T00:00:00.000Z' });
const base = { runbook: 'residual-multipath-cleanup', node: 'worker-1' };

describe('the mode a job runs in', () => {
  it('follows configuration when nothing overrides it', () => {
    expect(effectiveMode({ ...base, configured: 'dry-run' })).toEqual({
      mode: 'dry-run',
      why: 'runbook residual-multipath-cleanup dry-run by configuration',
    });
    expect(effectiveMode({ ...base, configured: 'enforce' }).mode).toBe('enforce');
  });

  it('lets an API override of the runbook win over configuration, and says who and why', () => {
    const m = effectiveMode({ ...base, configured: 'dry-run', runbookOverride: o('enforce') });
    expect(m).toEqual({
      mode: 'enforce',
      why: 'runbook residual-multipath-cleanup enforce set by alice at 2026-12-01T00:00:00.000Z (INC-7)',
    });
  });

  it('holds a node to dry-run by API override or by its label, even when the runbook enforces', () => {
    expect(effectiveMode({ ...base, configured: 'enforce', nodeOverride: o('dry-run', 'bob') })).toMatchObject({
      mode: 'dry-run',
      why: expect.stringMatching(/^node worker-1 dry-run set by bob/),
    });
    expect(effectiveMode({ ...base, configured: 'enforce', nodeLabel: 'dry-run' })).toMatchObject({
      mode: 'dry-run',
      why: 'node worker-1 dry-run by its label volume-medic.io/mode',
    });
  });

  it('never lets a node raise a dry-run runbook to enforce', () => {
    expect(effectiveMode({ ...base, configured: 'dry-run', nodeOverride: o('enforce') }).mode).toBe('dry-run');
    expect(effectiveMode({ ...base, configured: 'dry-run', nodeLabel: 'enforce' }).mode).toBe('dry-run');
  });

  it("prefers the operator's API override of a node over the node label", () => {
    expect(effectiveMode({ ...base, configured: 'enforce', nodeLabel: 'dry-run', nodeOverride: o('enforce') }).mode).toBe('enforce');
  });

  it('ignores a label value it does not know', () => {
    expect(effectiveMode({ ...base, configured: 'enforce', nodeLabel: 'off' })).toMatchObject({
      mode: 'enforce',
      why: 'runbook residual-multipath-cleanup enforce by configuration',
    });
  });
});
