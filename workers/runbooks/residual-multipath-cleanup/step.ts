import type { PlannedStep } from '../../engine/runbook.ts';
import type { IntentRecord } from './intents.ts';

// The steps this runbook can plan, as data. Map names come from `multipath -ll` and go into argv
// only (never a path or a shell); disk names are validated (`sd[a-z]+`) before a path is built.
// Each step carries what identifies its object (WWID, H:C:T:L), so a retry never acts on a
// device that merely inherited the name.

type S<K extends string, P> = PlannedStep & { kind: K } & P;

export type ResidualStep =
  /** Writes the intent record of a map's destructive sequence (before its first destructive step). */
  | S<'record-intent', { record: IntentRecord }>
  /** Removes the intent record once the sequence is complete (or the record is moot). */
  | S<'close-intent', { wwid: string }>
  /** High-risk: `dmsetup message <map> 0 fail_if_no_path`, so openers stuck on queued I/O get EIO and let go. */
  | S<'release-queued-io', { map: string; wwid: string; dm: string; highRisk: true }>
  /** `multipath -f <map>` after the open count fell to 0; never a bare `dmsetup remove`. */
  | S<'flush-map', { map: string; wwid: string; dm: string; paths: string[]; links: string[] }>
  /** `echo 1 > /sys/block/<disk>/device/delete` for one path of a flushed map. */
  | S<'delete-disk', { disk: string; hctl: string | null; wwid: string; map: string }>;
