import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ReadonlyFilesystemRecoveryJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { Mode } from '../../../../../src/core/catalogue/result.ts';
import { GO, isHighRisk, ParkedError, type StepGate } from '../../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import type { Verification } from '../../../../../workers/engine/runbook.ts';
import { createReadonlyFilesystemRecovery } from '../../../../../workers/runbooks/readonly-filesystem-recovery/handler.ts';
import { PUBLISH, STAGING, UID } from './facts.fixture.ts';
import { fakeNode, lookups, RecordingKubeWrites } from './fake-node.ts';

// The whole runbook on a fake node (observe -> plan -> wait or park -> delete-pod re-checked ->
// verify), with a recording fake of the Kubernetes write port.

const job: ReadonlyFilesystemRecoveryJob = {
  version: 1,
  key: 'readonly_worker-1_dm-0',
  runbook: 'readonly-filesystem-recovery',
  target: { node: 'worker-1', device: 'dm-0' },
  evidence: [{ source: 'k8s-event', summary: 'Node worker-1: FilesystemIsReadOnly', raw: {} }],
};

const approvalGate: StepGate = {
  beforeStep: async (step) => (isHighRisk(step) ? { go: false, park: { reason: 'approval', why: 'high-risk step waits for approval' } } : GO),
};

const ctx = (mode: Mode, gate?: StepGate): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn: 'worker-1',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
  ...(gate ? { gate } : {}),
});

function setup(pods = lookups()) {
  const host = fakeNode();
  const kube = new RecordingKubeWrites();
  const clock = { t: Date.parse('2026-12-07T10:00:00.000Z') };
  const handler = createReadonlyFilesystemRecovery({
    host,
    kube,
    lookups: pods,
    stateDir: '/var/lib/volume-medic',
    now: () => new Date(clock.t),
    sleep: async (ms) => {
      clock.t += ms;
      // What kubelet and the CSI driver do after the delete: unstage, fsck, stage, publish for the new pod.
      host.put(
        '/proc/1/mountinfo',
        `25 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw\n310 25 253:0 / ${STAGING} rw,relatime - ext4 /dev/mapper/mpatha rw,errors=remount-ro\n`,
      );
      host.put('/sys/fs/ext4/dm-0/errors_count', '0\n');
    },
  });
  return { host, kube, clock, handler, pods };
}

const parked = async (p: Promise<unknown>): Promise<ParkedError> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ParkedError)) throw new Error(`expected a parked job, got ${String(err)}`);
  return err;
};

describe('readonly-filesystem-recovery, the whole runbook', () => {
  it('parks (paths-still-dead) while every path is dead, reads nothing from the device and deletes nothing', async () => {
    const { host, kube, handler } = setup();
    const audited: string[] = [];
    const err = await parked(handler(job, { ...ctx('enforce'), audit: async (action) => void audited.push(action) }));
    expect(err.parking).toMatchObject({ reason: 'evidence', why: expect.stringMatching(/^paths-still-dead: /) });
    expect(err.result.outcome).toBe('waiting');
    // A wait, not a refusal: nothing in the audit trail, and the result shows what was looked at.
    expect(audited).toEqual([]);
    expect(err.result.commands.map((c) => c.argv[0])).toContain('multipath');
    expect(host.commands.some((a) => a[0] === 'dd')).toBe(false);
    expect(kube.deletes).toEqual([]);
  });

  it('in dry-run, says that enforce would wait while the paths are dead (not a refusal), and writes nothing', async () => {
    const { host, kube, handler } = setup();
    const result = await handler(job, ctx('dry-run'));
    expect(result.outcome).toBe('planned');
    expect(result.refusals).toEqual([]);
    expect(result.summary).toMatch(/enforce would wait until .*: paths-still-dead: /);
    expect(host.commands.some((a) => a[0] === 'dd')).toBe(false);
    expect(kube.deletes).toEqual([]);
  });

  it('once the paths are back waits for them to stay back, then parks for approval before delete-pod: no delete while it waits', async () => {
    const { host, kube, clock, handler } = setup();
    host.pathsBack();
    const young = await parked(handler(job, ctx('enforce', approvalGate)));
    expect(young.parking).toMatchObject({ reason: 'evidence', why: expect.stringContaining(`step delete-pod:shop/db-0:${UID} waits for evidence to mature`) });
    clock.t += 121_000;
    const approval = await parked(handler(job, ctx('enforce', approvalGate)));
    expect(approval.parking.reason).toBe('approval');
    expect(approval.plan.steps.map((s) => s.id)).toEqual([`delete-pod:shop/db-0:${UID}`]);
    expect(kube.deletes).toEqual([]);
    expect(kube.events).toEqual([]);
  });

  it('deletes the pod through the write port with its uid and resourceVersion as preconditions, posts the Events, and verifies the new mount', async () => {
    const { host, kube, clock, handler } = setup();
    host.pathsBack();
    await parked(handler(job, ctx('enforce')));
    clock.t += 121_000;
    const result = await handler(job, ctx('enforce'));
    expect(kube.deletes).toEqual([
      { namespace: 'shop', name: 'db-0', uid: UID, resourceVersion: '4711', reason: expect.stringContaining('Remounting filesystem read-only') },
    ]);
    expect(kube.events.map((e) => `${e.involved.kind}/${e.involved.name} ${e.type} ${e.reason}`)).toEqual([
      'Pod/db-0 Warning ReadOnlyVolumeRecovery',
      'Node/worker-1 Warning ReadOnlyVolumeRecovery',
    ]);
    expect(result.outcome).toBe('succeeded');
    expect((result.verification as Verification | undefined)?.checks.map((c) => c.what)).toEqual([
      'no stopped mount of dm-0 (253:0) is left',
      'dm-0 is mounted again with super options rw',
      'dm-0 records no error (errors_count 0)',
    ]);
    expect(host.commands.some((a) => a.includes('remount,rw') || a[0] === 'mount')).toBe(false);
  });

  it('in dry-run plans the delete and records it as a simulated write, without asking the API server to delete', async () => {
    const { host, kube, handler } = setup();
    host.pathsBack();
    const result = await handler(job, ctx('dry-run'));
    expect(result.outcome).toBe('planned');
    expect(kube.deletes).toEqual([]);
    expect(result.commands.map((c) => c.argv[0])).toContain('kube:delete-pod');
    expect(result.commands.find((c) => c.argv[0] === 'kube:delete-pod')?.argv).toEqual(['kube:delete-pod', 'shop/db-0', `uid=${UID}`, 'rv=4711']);
  });

  it('verify fails remounted-before-unstage when a new pod publishes the still-stopped file system', async () => {
    const { host, kube, clock, handler } = setup();
    host.pathsBack();
    await parked(handler(job, ctx('enforce')));
    clock.t += 121_000;
    const other = '0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e';
    // The old pod's replacement lands here while the global mount is still there: it gets the same stopped super block.
    kube.onDelete = () => {
      const mountinfo = (host.nodes.get('/proc/1/mountinfo') as { content: string }).content;
      host.put('/proc/1/mountinfo', `${mountinfo}302 25 253:0 / ${PUBLISH.replace(UID, other)} rw,relatime - ext4 /dev/mapper/mpatha ro,errors=remount-ro\n`);
    };
    const err = await handler(job, ctx('enforce')).catch((e: unknown) => e);
    expect(kube.deletes).toHaveLength(1);
    expect(String((err as Error).message)).toContain('remounted-before-unstage');
  });
});
