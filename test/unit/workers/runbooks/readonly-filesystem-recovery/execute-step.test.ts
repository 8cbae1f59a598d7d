import { describe, expect, it } from 'vitest';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { createStepExecutor } from '../../../../../workers/runbooks/readonly-filesystem-recovery/execute-step.ts';
import { plan } from '../../../../../workers/runbooks/readonly-filesystem-recovery/plan.ts';
import { DEFAULT_POLICY } from '../../../../../workers/runbooks/readonly-filesystem-recovery/policy.ts';
import type { ReadonlyStep } from '../../../../../workers/runbooks/readonly-filesystem-recovery/step.ts';
import { facts, UID } from './facts.fixture.ts';
import { fakeNode, lookups, RecordingKubeWrites, stoppedMountinfo, thePod } from './fake-node.ts';

// delete-pod's re-check right before it acts: the plan's step against what the node and the API
// server say now.

const OTHER_UID = '0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e';

function planned(): ReadonlyStep {
  const p = plan(facts(), DEFAULT_POLICY);
  if (p.kind !== 'steps' || !p.steps[0]) throw new Error(`expected a step, got ${p.kind}`);
  return p.steps[0];
}

function executor(pods = lookups()) {
  const host = fakeNode();
  host.pathsBack();
  const kube = new RecordingKubeWrites();
  const steps = createStepExecutor({ policy: DEFAULT_POLICY, lookups: pods, node: 'worker-1', jobId: 'job-1' });
  return { host, kube, steps, pods };
}

describe('delete-pod, checked right before it acts', () => {
  it('is done, and deletes nothing, when the pod has another uid than the plan saw (the StatefulSet made it again)', async () => {
    const { host, kube, steps, pods } = executor();
    const step = planned();
    pods.replacePod(thePod({ uid: OTHER_UID }));
    expect(await steps.isDone(step, host, kube)).toBe(true);
    await expect(steps.apply(step, host, kube)).rejects.toThrow(RefusedError);
    await expect(steps.apply(step, host, kube)).rejects.toThrow(`changed-since-plan: pod shop/db-0 has uid ${OTHER_UID} now, not ${UID}`);
    expect(kube.deletes).toEqual([]);
  });

  it('is done when the pod is gone or already terminating', async () => {
    const { host, kube, steps, pods } = executor();
    pods.replacePod(undefined);
    expect(await steps.isDone(planned(), host, kube)).toBe(true);
    pods.replacePod(thePod({ deletionTimestamp: '2026-12-07T10:00:01.000Z' }));
    expect(await steps.isDone(planned(), host, kube)).toBe(true);
  });

  it('refuses when the stopped mounts are gone already, a path died again, or the pod lost its controller', async () => {
    const rw = executor();
    rw.host.put('/proc/1/mountinfo', '25 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw\n');
    await expect(rw.steps.apply(planned(), rw.host, rw.kube)).rejects.toThrow(
      /changed-since-plan: no kubelet mount of dm-0 \(253:0\) the plan saw stopped is left/,
    );
    // The same mounts, shown rw (a 6.1 kernel's stopped ext4): still the stopped instances, so no refusal for that.
    const same = executor();
    same.host.put('/proc/1/mountinfo', stoppedMountinfo('rw,errors=remount-ro'));
    await same.steps.apply(planned(), same.host, same.kube);
    expect(same.kube.deletes).toHaveLength(1);

    const dead = executor();
    dead.host.on(['multipath', '-ll'], {
      stdout:
        "mpatha (1Linux_scsi_debug_2000) dm-0 Linux,scsi_debug\nsize=64M features='0' hwhandler='1 alua' wp=rw\n`-+- policy='service-time 0' prio=0 status=enabled\n  `- 2:0:0:0 sda 8:0  failed faulty offline\n",
    });
    await expect(dead.steps.apply(planned(), dead.host, dead.kube)).rejects.toThrow(/changed-since-plan: a path of mpatha is not active/);

    const { controller: _c, ...bare } = thePod();
    const orphan = executor(lookups(bare));
    await expect(orphan.steps.apply(planned(), orphan.host, orphan.kube)).rejects.toThrow(/changed-since-plan: pod shop\/db-0 has no controller owner/);

    expect([...rw.kube.deletes, ...dead.kube.deletes, ...orphan.kube.deletes]).toEqual([]);
  });

  it('deletes with the fresh uid and resourceVersion as preconditions, and reports on the pod and the node', async () => {
    const { host, kube, steps, pods } = executor();
    pods.replacePod(thePod({ resourceVersion: '4712' }));
    await steps.apply(planned(), host, kube);
    expect(kube.deletes).toMatchObject([{ namespace: 'shop', name: 'db-0', uid: UID, resourceVersion: '4712' }]);
    expect(kube.deletes[0]).not.toHaveProperty('gracePeriodSeconds');
    expect(kube.events.map((e) => [e.involved.kind, e.reason, e.type])).toEqual([
      ['Pod', 'ReadOnlyVolumeRecovery', 'Warning'],
      ['Node', 'ReadOnlyVolumeRecovery', 'Warning'],
    ]);
    expect(kube.events[0]?.message).toContain('EXT4-fs (dm-0): Remounting filesystem read-only');
  });
});
