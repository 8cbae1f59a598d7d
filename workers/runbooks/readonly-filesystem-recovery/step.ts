import type { PlannedStep } from '../../engine/runbook.ts';

// The one step this runbook plans (docs/decisions/0008 §3.5): delete a pod that uses a file system
// the kernel stopped, so kubelet unpublishes and unstages it and the next pod's stage checks and
// mounts it again. Never `mount -o remount,rw`: on an aborted journal it fails with EROFS, and
// where it succeeds it writes on an unchecked file system. The step carries what identifies its
// pod (UID, resourceVersion) and its device (name and major:minor), so a retry never deletes a pod
// or trusts a device that merely inherited the name.

export type ReadonlyStep = PlannedStep & {
  kind: 'delete-pod';
  risk: 'high';
  device: string;
  majorMinor: string;
  /** mountinfo ids of kubelet's mounts of the stopped file system: the same instances must still be there right before, and gone after. */
  mountIds: number[];
  /** The multipath map of the device, when it is one: re-checked all active right before. */
  map: string | null;
  pod: { namespace: string; name: string; uid: string; resourceVersion: string };
  pv: string | null;
  /** The kernel's line the Event quotes. */
  kernelLine: string | null;
  /** When the kernel reported it (its latest error line for the device): a mount after it is a new one. */
  stoppedAt: string | null;
};

export const deletePodStepId = (p: { namespace: string; name: string; uid: string }): string => `delete-pod:${p.namespace}/${p.name}:${p.uid}`;
