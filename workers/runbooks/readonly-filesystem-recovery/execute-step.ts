import { RefusedError } from '../../../src/core/errors.ts';
import type { Host } from '../../host/host.ts';
import { parseMountinfo } from '../../host/mountinfo.ts';
import type { KubeWrites } from '../../kube-writes/kube-writes.ts';
import type { StepExecutor } from '../../engine/runbook.ts';
import { kubeletMountOf } from './kubelet-mounts.ts';
import { deviceHealth, isActivePath } from './observe-health.ts';
import { mountedAgainSince } from './observe-kernel.ts';
import type { ReadonlyPolicy } from './policy.ts';
import type { RecoveryLookups } from './recovery-lookups.ts';
import type { ReadonlyStep } from './step.ts';

// delete-pod, checked right before it acts (docs/decisions/0008 §3.5): the file system is still
// stopped (fresh mountinfo: the kubelet mounts the plan saw stopped, by mount id, are still there;
// a kernel-stopped mount stays stopped until it is unmounted, whatever its options say),
// the device is still back (fresh `multipath -ll`: every path active), and the pod is still the
// one the plan named (fresh pods get: same uid, on this node, a controller owner, not
// terminating). The delete goes through the write port with the fresh pod's uid and
// resourceVersion as preconditions: the API server refuses it (409) if the pod changed after this
// look. Anything else found is a refusal naming what changed: the job observes and plans again
// only when an operator retries it or the scan enqueues it anew.

export interface StepDeps {
  policy: ReadonlyPolicy;
  lookups: RecoveryLookups | undefined;
  node: string;
  jobId: string;
}

/** The mounts the plan saw stopped are still those mounts (a stopped mount stays stopped until it is unmounted). */
async function stillStopped(host: Host, step: ReadonlyStep, policy: ReadonlyPolicy): Promise<string | null> {
  const entries = parseMountinfo((await host.readFile('/proc/1/mountinfo')) ?? '');
  const mounts = entries.filter((e) => e.majorMinor === step.majorMinor).flatMap((e) => kubeletMountOf(policy.kubeletRoot, e) ?? []);
  const same = mounts.filter((m) => step.mountIds.includes(m.id));
  if (!same.length) return `no kubelet mount of ${step.device} (${step.majorMinor}) the plan saw stopped is left (mount ids ${step.mountIds.join(', ')})`;
  // Mount ids are reused: a mount of the device after the stop is a new one, whatever its id.
  if (step.stoppedAt && (await mountedAgainSince(host, step.device, step.stoppedAt, policy.commandTimeoutMs)) === true)
    return `${step.device} was mounted again after the kernel stopped it at ${step.stoppedAt}`;
  return null;
}

async function stillBack(host: Host, step: ReadonlyStep, policy: ReadonlyPolicy): Promise<string | null> {
  if (!step.map) return null;
  const health = await deviceHealth(host, step.device, policy.commandTimeoutMs);
  if (health.kind !== 'multipath') return health.kind === 'unknown' ? health.why : `${step.device} is not the multipath map ${step.map} any more`;
  if (health.map !== step.map) return `${step.device} is now map ${health.map}, not ${step.map}`;
  const bad = health.paths.filter((p) => !isActivePath(p));
  return bad.length || !health.paths.length
    ? `a path of ${step.map} is not active: ${bad.map((p) => `${p.dev ?? '-'} ${p.dmState} ${p.checkerState}`).join(', ')}`
    : null;
}

export function createStepExecutor(deps: StepDeps): StepExecutor<ReadonlyStep> {
  const fresh = async (step: ReadonlyStep) => {
    if (!deps.lookups) throw new RefusedError([`pods-unknown: no access to the Kubernetes API to read pod ${step.pod.namespace}/${step.pod.name} again`]);
    return deps.lookups.pod({ namespace: step.pod.namespace, name: step.pod.name });
  };
  return {
    async isDone(step) {
      const pod = await fresh(step);
      return !pod || pod.uid !== step.pod.uid || pod.deletionTimestamp !== undefined;
    },

    async apply(step: ReadonlyStep, host: Host, kube: KubeWrites) {
      const pod = await fresh(step);
      const name = `${step.pod.namespace}/${step.pod.name}`;
      const changed: string[] = [];
      if (!pod) changed.push(`pod ${name} is gone`);
      else {
        if (pod.uid !== step.pod.uid) changed.push(`pod ${name} has uid ${pod.uid ?? 'none'} now, not ${step.pod.uid}`);
        if (pod.node !== deps.node) changed.push(`pod ${name} is on ${pod.node ?? 'no node'}, not ${deps.node}`);
        if (!pod.controller) changed.push(`pod ${name} has no controller owner`);
        if (pod.deletionTimestamp) changed.push(`pod ${name} is terminating since ${pod.deletionTimestamp}`);
      }
      const fs = await stillStopped(host, step, deps.policy);
      if (fs) changed.push(fs);
      const paths = await stillBack(host, step, deps.policy);
      if (paths) changed.push(paths);
      if (changed.length || !pod?.resourceVersion) {
        throw new RefusedError(changed.length ? changed.map((c) => `changed-since-plan: ${c}`) : [`pod-unknown: pod ${name} has no resourceVersion`]);
      }
      const reason = `job ${deps.jobId}: the kernel stopped the file system on ${step.device}${step.kernelLine ? ` (${step.kernelLine})` : ''}; its device is back, so the pod is deleted for kubelet to unstage, check and mount it again`;
      await kube.deletePod({ namespace: step.pod.namespace, name: step.pod.name, uid: step.pod.uid, resourceVersion: pod.resourceVersion, reason });
      const message = `volume-medic deleted pod ${name} (uid ${step.pod.uid}): ${reason}`;
      // The Events report; the delete is done whatever becomes of them (the job's own Events say so too).
      await Promise.allSettled([
        kube.event({
          involved: { kind: 'Pod', namespace: step.pod.namespace, name: step.pod.name, uid: step.pod.uid },
          reason: 'ReadOnlyVolumeRecovery',
          message,
          type: 'Warning',
        }),
        kube.event({ involved: { kind: 'Node', name: deps.node }, reason: 'ReadOnlyVolumeRecovery', message, type: 'Warning' }),
      ]);
    },
  };
}
