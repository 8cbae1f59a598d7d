import type { PlannedStep } from '../../engine/runbook.ts';
import type { PlaceholderRecord } from './record.ts';

// The steps this runbook can plan, as data. Paths are host paths; loop names are validated
// kernel names (loopN). Order in a plan: record first (so a crash leaves a record naming the
// loop device it was about to take), then image, node, attach, link.

type S<K extends string, P> = PlannedStep & { kind: K } & P;

export type PlaceholderStep =
  | S<'write-record', { record: PlaceholderRecord }>
  | S<'create-image', { image: string; bytes: number }>
  | S<'ensure-loop-node', { loop: string; minor: number }>
  | S<'attach-loop', { loop: string; image: string }>
  /** `replaces`: an existing link target we may overwrite (our own earlier link), else none. */
  | S<'point-link', { path: string; target: string; replaces: string | null }>
  | S<'remove-link', { path: string; target: string }>
  | S<'detach-loop', { loop: string; image: string }>
  | S<'delete-image', { image: string }>
  | S<'delete-record', { pv: string }>;
