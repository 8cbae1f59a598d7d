import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { JobOf } from '../../../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import { lazyRegistry } from '../../../../workers/engine/lazy-registry.ts';
import type { RunbookContext, RunbookRegistry } from '../../../../workers/engine/registry.ts';

const ctx: RunbookContext = {
  jobId: 'j',
  attempt: 1,
  mode: 'dry-run',
  ranOn: 'worker-1',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
};
const job = { runbook: 'rbd-unmap' } as unknown as JobOf<'rbd-unmap'>;
const result = { outcome: 'nothing-to-do' } as unknown as RunbookResult;

describe('lazyRegistry', () => {
  it('loads nothing until a job runs, then once for all jobs', async () => {
    let loads = 0;
    const registry = lazyRegistry(['rbd-unmap', 'local-pv-placeholder'], async () => {
      loads++;
      return { 'rbd-unmap': async () => result } satisfies RunbookRegistry;
    });
    expect(Object.keys(registry).sort()).toEqual(['local-pv-placeholder', 'rbd-unmap']);
    expect(registry['residual-multipath-cleanup']).toBeUndefined();
    expect(loads).toBe(0);
    const handler = registry['rbd-unmap']!;
    expect(await Promise.all([handler(job, ctx), handler(job, ctx)])).toEqual([result, result]);
    expect(loads).toBe(1);
    await expect(registry['local-pv-placeholder']!({} as JobOf<'local-pv-placeholder'>, ctx)).rejects.toThrow(/listed for this agent but not in the registry/);
    expect(loads).toBe(1);
  });

  it('tries a failed load again on the next job', async () => {
    let loads = 0;
    const registry = lazyRegistry(['rbd-unmap'], async () => {
      loads++;
      if (loads === 1) throw new Error('import failed');
      return { 'rbd-unmap': async () => result };
    });
    await expect(registry['rbd-unmap']!(job, ctx)).rejects.toThrow('import failed');
    expect(await registry['rbd-unmap']!(job, ctx)).toBe(result);
    expect(loads).toBe(2);
  });
});
