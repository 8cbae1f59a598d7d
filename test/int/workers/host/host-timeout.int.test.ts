import { readFile } from 'node:fs/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { LocalPvPlaceholderJob } from '../../../../src/core/catalogue/jobs.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import { RunbookFailedError } from '../../../../workers/engine/runbook-failed-error.ts';
import type { PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { expectOk } from '../../../../workers/host/command-failed.ts';
import { livingGroupMembers, parseProcStat } from '../../../../workers/host/process-group.ts';
import { createRealHost } from '../../../../workers/host/real-host.ts';

// A command that hangs is killed at its deadline, with its whole process group, and the result
// says so. Real processes, no Redis.

const host = createRealHost({ timeoutMs: 5_000, killGraceMs: 300 });

describe('a host command that hangs', () => {
  it('is killed at its deadline and reported as timed out', async () => {
    const r = await host.run(['sleep', '30'], { timeoutMs: 300 });
    expect(r).toMatchObject({ timedOut: true, exitCode: null, signal: 'SIGTERM', stuckPids: [] });
    expect(r.durationMs).toBeGreaterThanOrEqual(300);
    expect(r.durationMs).toBeLessThan(2_000);
  });

  it('kills a group whose members ignore SIGTERM, children included', async () => {
    const started = Date.now();
    const r = await host.run(['sh', '-c', 'trap "" TERM; sleep 30 & echo child=$!; wait'], { timeoutMs: 300 });
    expect(r).toMatchObject({ timedOut: true, signal: 'SIGKILL', stuckPids: [] });
    expect(Date.now() - started).toBeLessThan(3_000);
    const child = Number(/child=(\d+)/.exec(r.stdout)?.[1]);
    expect(child).toBeGreaterThan(0);
    // The background sleep was in the group too: it is gone, or a zombie waiting for init to reap it.
    const stat = await readFile(`/proc/${child}/stat`, 'utf8').catch(() => null);
    expect(stat === null ? 'gone' : parseProcStat(stat)?.state).toMatch(/^(gone|Z|X)$/);
  });

  it('keeps the exit code and caps a flood of output', async () => {
    const flood = createRealHost({ maxOutputBytes: 1000 });
    const r = await flood.run(['sh', '-c', 'head -c 100000 /dev/zero | tr "\\0" x; exit 3']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toMatch(/^x{1000}\n\[\.\.\. 99000 more bytes dropped\]$/);
  });

  it('finds no living member of a group that is gone', async () => {
    expect(await livingGroupMembers(2 ** 22 + 12345)).toEqual([]);
  });
});

describe('a runbook step whose command hangs', () => {
  it('fails at the deadline and the job result shows the timed-out command', async () => {
    const job: LocalPvPlaceholderJob = {
      version: 1,
      key: 'lpv_hang_0123456789ab',
      runbook: 'local-pv-placeholder',
      action: 'place',
      target: { node: 'worker-1', pv: 'pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
      evidence: [{ source: 'api', summary: 'test', raw: {} }],
    };
    const probe: PlannedStep = { id: 'probe', description: 'a read that hangs on a dead device', destructive: false };
    const def: RunbookDefinition<'local-pv-placeholder', null, PlannedStep> = {
      runbook: 'local-pv-placeholder',
      observe: async () => null,
      plan: () => ({ kind: 'steps', summary: 'probe', steps: [probe] }),
      steps: {
        isDone: async () => false,
        apply: async (_s, h) => {
          expectOk(await h.run(['sh', '-c', 'trap "" TERM; sleep 30'], { timeoutMs: 300 }));
        },
      },
      verify: async () => ({ ok: true, checks: [] }),
    };
    const { mkdtemp, rm } = await import('node:fs/promises');
    const root = await mkdtemp('/tmp/vm-timeout-');
    try {
      const ctx = {
        jobId: job.key,
        attempt: 1,
        mode: 'enforce' as const,
        ranOn: 'worker-1',
        log: pino({ level: 'silent' }),
        signal: new AbortController().signal,
      };
      const err = await runRunbook(def, job, ctx, { host: createRealHost({ root, killGraceMs: 300 }), stateDir: '/state' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RunbookFailedError);
      const result = (err as RunbookFailedError).result;
      expect(result.outcome).toBe('failed');
      expect(result.summary).toMatch(/timed out after \d+ ms and was killed/);
      expect(result.steps[0]).toMatchObject({ id: 'probe', status: 'failed' });
      expect(result.steps[0]?.commands[0]).toMatchObject({ timedOut: true, signal: 'SIGKILL', stuckPids: [] });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
