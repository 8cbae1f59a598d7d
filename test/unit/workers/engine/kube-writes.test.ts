import { describe, expect, it } from 'vitest';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { ParkedError } from '../../../../workers/engine/gate.ts';
import type { PlanViewStep } from '../../../../workers/engine/planned-commands.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import { PreconditionFailedError } from '../../../../workers/kube-writes/kube-writes.ts';
import { APPROVAL_GATE, context, deletePodArgv, deletePodStep, JOB, POD, writeRunbook } from '../../../support/kube-write-runbook.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { RecordingKubeWrites } from '../../../testkit/recording-kube-writes.ts';

// A parked, dry-run or refused job cannot write to the Kubernetes API (docs/decisions/0008 §5.3):
// the engine hands steps the write port only wrapped (audited in enforce, simulated otherwise), and
// simulates a parked job's remaining steps against its dry-run twin. The port under the engine
// here records every call and throws on it, so a write that got through shows twice.

const steps = { kind: 'steps' as const, summary: 'delete the pod', steps: [deletePodStep()] };
const caught = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => {
      throw new Error('the job was expected to stop');
    },
    (e: unknown) => e,
  );

describe('the Kubernetes write port under the engine', () => {
  it('(a) a job parked for approval before delete-pod sends nothing, and its plan shows the kube:delete-pod it would send', async () => {
    const kube = RecordingKubeWrites.throwing();
    const host = new FakeHost();
    const err = await caught(runRunbook(writeRunbook(steps), JOB, context('enforce', APPROVAL_GATE), { host, kube, stateDir: '/state' }));
    expect(err).toBeInstanceOf(ParkedError);
    expect(kube.calls).toEqual([]);
    const planned = (err as ParkedError).plan.steps as PlanViewStep[];
    expect(planned[0]?.plannedArgv).toEqual([
      deletePodArgv(),
      ['kube:event', `Pod/${POD.namespace}/${POD.name}`, 'Warning', 'ReadOnlyVolumeRecovery', steps.steps[0]!.description],
    ]);
    expect((err as ParkedError).result.outcome).toBe('waiting');
    expect((err as ParkedError).result.commands).toEqual([]);
  });

  it('(b) a dry-run sends nothing and lists the simulated kube:delete-pod in its result, with no exit code', async () => {
    const kube = RecordingKubeWrites.throwing();
    const result = await runRunbook(writeRunbook(steps), JOB, context('dry-run'), { host: new FakeHost(), kube, stateDir: '/state' });
    expect(kube.calls).toEqual([]);
    expect(result.outcome).toBe('planned');
    expect(result.steps.map((s) => s.status)).toEqual(['would-run']);
    expect(result.commands.map((c) => [c.argv, c.exitCode])).toEqual([
      [deletePodArgv(), null],
      [['kube:event', `Pod/${POD.namespace}/${POD.name}`, 'Warning', 'ReadOnlyVolumeRecovery', steps.steps[0]!.description], null],
    ]);
  });

  it('(c) a job its plan refuses sends nothing', async () => {
    const kube = RecordingKubeWrites.throwing();
    const plan = { kind: 'refuse' as const, reasons: ['bare-pod: shop/db-0 has no controller owner'] };
    const err = await caught(runRunbook(writeRunbook(plan), JOB, context('enforce'), { host: new FakeHost(), kube, stateDir: '/state' }));
    expect(err).toBeInstanceOf(RefusedError);
    expect(kube.calls).toEqual([]);
    expect(((err as RefusedError).result as RunbookResult).commands).toEqual([]);
  });

  it.each([
    ['stale', deletePodStep({ observedAt: new Date(Date.now() - 10 * 60_000) }), /stale: observed 600 s ago/],
    ['missing', deletePodStep({ status: 'missing' }), /no evidence that the pod uses a file system/],
  ])('(d) a step whose evidence is %s is refused at the step and sends nothing', async (_what, step, reason) => {
    const kube = RecordingKubeWrites.throwing();
    const plan = { kind: 'steps' as const, summary: 'delete the pod', steps: [step] };
    const err = await caught(runRunbook(writeRunbook(plan), JOB, context('enforce'), { host: new FakeHost(), kube, stateDir: '/state' }));
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join('\n')).toMatch(reason);
    expect(kube.calls).toEqual([]);
  });

  it('(e) in enforce the delete reaches the port with its preconditions, and the result records it with exit 0', async () => {
    const kube = new RecordingKubeWrites();
    const result = await runRunbook(writeRunbook(steps), JOB, context('enforce'), { host: new FakeHost(), kube, stateDir: '/state' });
    expect(result.outcome).toBe('succeeded');
    expect(kube.calls.map((c) => c.method)).toEqual(['deletePod', 'event']);
    expect(kube.calls[0]?.request).toEqual({ ...POD, reason: steps.steps[0]!.description });
    expect(result.steps[0]?.commands.map((c) => [c.argv, c.exitCode, c.stdout])).toEqual([
      [deletePodArgv(), 0, 'deleted'],
      [['kube:event', `Pod/${POD.namespace}/${POD.name}`, 'Warning', 'ReadOnlyVolumeRecovery', steps.steps[0]!.description], 0, ''],
    ]);
  });

  it('(e) a precondition the API server refuses fails the step, recorded with exit 1 and the reason', async () => {
    const kube = new RecordingKubeWrites();
    kube.failWith = new PreconditionFailedError('pod shop/db-0 is no longer uid=... rv=812: HTTP 409', 409);
    const err = await caught(runRunbook(writeRunbook(steps), JOB, context('enforce'), { host: new FakeHost(), kube, stateDir: '/state' }));
    const result = (err as { result: RunbookResult }).result;
    expect(result.outcome).toBe('failed');
    expect(result.commands.map((c) => [c.argv, c.exitCode, c.stderr])).toEqual([[deletePodArgv(), 1, 'pod shop/db-0 is no longer uid=... rv=812: HTTP 409']]);
  });

  it('without a port (EngineDeps.kube unset) a write in enforce fails the step, never passes silently', async () => {
    const err = await caught(runRunbook(writeRunbook(steps), JOB, context('enforce'), { host: new FakeHost(), stateDir: '/state' }));
    const result = (err as { result: RunbookResult }).result;
    expect(result.outcome).toBe('failed');
    expect(result.summary).toMatch(/no Kubernetes write access/);
  });
});
