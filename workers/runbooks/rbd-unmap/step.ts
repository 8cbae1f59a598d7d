import type { PlannedStep } from '../../engine/runbook.ts';
import type { ClassifyContext } from './classify.ts';

type S<K extends string, P> = PlannedStep & { kind: K } & P;

export type UnmapStep =
  /** `umount <mountPoint>` in the host's mount namespace: a stale kubelet mount of the device. */
  | S<'umount', { device: string; majorMinor: string | null; mountPoint: string }>
  /**
   * `rbd unmap /dev/rbdN`; when busy, release stale holders by the same rules and retry;
   * `-o force` only if `forceAllowed` and nothing live holds it.
   */
  | S<'unmap', { device: string; pool: string; image: string; majorMinor: string | null; forceAllowed: boolean; context: ClassifyContext }>;
