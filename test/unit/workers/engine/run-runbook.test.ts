import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Mode } from '../../../../src/core/catalogue/result.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { ParkedError } from '../../../../workers/engine/gate.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import { RunbookFailedError } from '../../../../workers/engine/runbook-failed-error.ts';
import type { Plan, PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { expectOk } from '../../../../workers/host/command-failed.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';
import { toyJob } from './toy-job.ts';

// The engine on a fake host: a toy runbook with one ordinary and one destructive step.

type Step = PlannedStep & { file: string };

const job = toyJob;

const ctx = (mode: Mode): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn: 'worker-1',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

function toy(planned: Plan<Step>, opts: { failOn?: string; verifyOk?: boolean } = {}): RunbookDefinition<'local-pv-placeholder', { seen: boolean }, Step> {
  return {
    runbook: 'local-pv-placeholder',
    observe: async (_job, host) => ({ seen: (await host.readFile('/state/seen')) !== null }),
    plan: () => planned,
    steps: {
      isDone: async (s, host) => (await host.readFile(s.file)) !== null,
      async apply(s, host) {
        if (s.id === opts.failOn) throw new Error(`boom in ${s.id}`);
        expectOk(await host.run(['touch-like', s.file]));
        await host.writeFile(s.file, 'x');
      },
    },
    verify: async () => ({ ok: opts.verifyOk ?? true, checks: [{ what: 'toy', ok: opts.verifyOk ?? true }] }),
  };
}

const twoSteps: Plan<Step> = {
  kind: 'steps',
  summary: 'two files',
  steps: [
    { id: 'make:a', description: 'make a', destructive: false, file: '/work/a' },
    {
      id: 'wipe:b',
      description: 'wipe b',
      destructive: true,
      file: '/work/b',
      evidence: [{ claim: 'b is ours', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
    },
  ],
};

const fakeHost = (): FakeHost => new FakeHost().on(['touch-like'], { exitCode: 0 });

describe('the runbook engine', () => {
  it('runs every step in enforce and reports each command', async () => {
    const host = fakeHost();
    const result = await runRunbook(toy(twoSteps), job, ctx('enforce'), { host, stateDir: '/state' });
    expect(result).toMatchObject({ outcome: 'succeeded', mode: 'enforce', ranOn: 'worker-1' });
    expect(result.steps.map((s) => s.status)).toEqual(['done', 'done']);
    expect(result.steps[1]?.commands.map((c) => c.argv[0])).toEqual(['touch-like', 'host:write-file']);
  });

  it('changes nothing in dry-run and lists what it would run', async () => {
    const host = fakeHost();
    const result = await runRunbook(toy(twoSteps), job, ctx('dry-run'), { host, stateDir: '/state' });
    expect(result.outcome).toBe('planned');
    expect(result.steps.map((s) => s.status)).toEqual(['would-run', 'would-run']);
    expect(result.steps[0]?.commands[0]).toMatchObject({ argv: ['touch-like', '/work/a'], exitCode: null });
    expect(host.commands).toEqual([]);
    expect(host.calls.filter((c) => c.op !== 'run')).toEqual([]);
  });

  it('does not repeat a destructive step that took effect before a failure, even when its check says it is undone', async () => {
    const host = fakeHost();
    const failing: Plan<Step> = {
      ...twoSteps,
      steps: [...twoSteps.steps, { id: 'late', description: 'fails', destructive: false, file: '/work/c' }],
    };
    await expect(runRunbook(toy(failing, { failOn: 'late' }), job, ctx('enforce'), { host, stateDir: '/state' })).rejects.toBeInstanceOf(RunbookFailedError);
    await host.unlink('/work/b');
    const retry = await runRunbook(toy(failing), job, ctx('enforce'), { host, stateDir: '/state' });
    expect(retry.steps.map((s) => s.status)).toEqual(['skipped-already-done', 'skipped-already-done', 'done']);
    expect(await host.readFile('/work/b')).toBeNull();
  });

  it('starts fresh for a later job with the same id once the earlier one finished', async () => {
    const host = fakeHost();
    await runRunbook(toy(twoSteps), job, ctx('enforce'), { host, stateDir: '/state' });
    await host.unlink('/work/b');
    const again = await runRunbook(toy(twoSteps), job, ctx('enforce'), { host, stateDir: '/state' });
    expect(again.steps.map((s) => s.status)).toEqual(['skipped-already-done', 'done']);
  });

  it('does not repeat a destructive step when the same job comes back within its deduplication window after it finished', async () => {
    // A Redis failover dropped the finished job's record and a retried webhook stored it again:
    // the same id, inside the window in which the receiver would have folded a repeat into it.
    let t = Date.now();
    const now = (): Date => new Date(t);
    const host = fakeHost();
    const within = { ...ctx('enforce'), sameJobWithinMs: 60_000 };
    await runRunbook(toy(twoSteps), job, within, { host, stateDir: '/state', now });
    await host.unlink('/work/b');
    t += 2_000;
    const again = await runRunbook(toy(twoSteps), job, within, { host, stateDir: '/state', now });
    expect(again.steps.map((s) => s.status)).toEqual(['skipped-already-done', 'skipped-already-done']);
    expect(await host.readFile('/work/b')).toBeNull();
    // After the window the same id is a new incident's job: it starts fresh.
    t += 60_000;
    const later = await runRunbook(toy(twoSteps), job, within, { host, stateDir: '/state', now });
    expect(later.steps.map((s) => s.status)).toEqual(['skipped-already-done', 'done']);
  });

  it('carries the result in a refusal so it can still be shown', async () => {
    const err = await runRunbook(toy({ kind: 'refuse', reasons: ['not opted in'] }), job, ctx('enforce'), {
      host: fakeHost(),
      stateDir: '/state',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).result).toMatchObject({ outcome: 'refused', refusals: ['not opted in'] });
  });

  it('parks a plan that waits (enforce) and reports the wait in dry-run: no step, no refusal, the journal as it was', async () => {
    const until = new Date('2026-12-07T12:00:00Z');
    const waits = toy({ kind: 'wait', why: 'paths-still-dead: sdb failed', until });
    const host = fakeHost();
    const err = await runRunbook(waits, job, ctx('enforce'), { host, stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParkedError);
    expect((err as ParkedError).parking).toEqual({ reason: 'evidence', why: 'paths-still-dead: sdb failed', until });
    expect((err as ParkedError).result).toMatchObject({ outcome: 'waiting', refusals: [], steps: [] });
    expect(host.commands.filter((c) => c[0] === 'touch-like')).toEqual([]);
    const dry = await runRunbook(waits, job, ctx('dry-run'), { host: fakeHost(), stateDir: '/state' });
    expect(dry).toMatchObject({ outcome: 'planned', refusals: [] });
    expect(dry.summary).toBe('dry-run, nothing changed: enforce would wait until 2026-12-07T12:00:00.000Z: paths-still-dead: sdb failed');
  });

  it('fails, with the result attached, when verification does not find what the plan promised', async () => {
    const err = await runRunbook(toy(twoSteps, { verifyOk: false }), job, ctx('enforce'), { host: fakeHost(), stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunbookFailedError);
    expect((err as RunbookFailedError).result).toMatchObject({ outcome: 'failed', verification: { ok: false } });
  });

  it('reports a failed command as a failed step with its exit code', async () => {
    const host = new FakeHost().on(['touch-like'], { exitCode: 3, stderr: 'no space\n' });
    const err = await runRunbook(toy(twoSteps), job, ctx('enforce'), { host, stateDir: '/state' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunbookFailedError);
    const result = (err as RunbookFailedError).result;
    expect(result.steps[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(/exit code 3.*no space/) });
  });
});
