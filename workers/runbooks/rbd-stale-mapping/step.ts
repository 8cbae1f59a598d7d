import type { RbdUnmapJob } from '../../../src/core/catalogue/jobs.ts';
import type { PlannedStep } from '../../engine/runbook.ts';

type S<K extends string, P> = PlannedStep & { kind: K } & P;

export type StaleMappingStep =
  /**
   * `ceph osd blocklist add <addr> <expiry>`; `undo` is the argv that lifts it. `node`: the node
   * the address belongs to; `network`: else the RBD_FENCE_CIDRS entry it lies in.
   */
  | S<'blocklist-add', { address: string; expirySeconds: number; pool: string; headerObject: string; node: string | null; network?: string; undo: string[] }>
  /** Put the node half on the watcher's node's queue; verify then watches `headerObject` for it to leave. */
  | S<'enqueue-unmap', { job: RbdUnmapJob; headerObject: string }>;
