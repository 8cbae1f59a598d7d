import type { FileType } from '../../host/host.ts';
import type { LoopAttachment } from './loops.ts';
import type { PlaceholderRecord } from './record.ts';

// Everything plan() decides on. Plain data: fixtures in unit tests are these objects.

export type PathState =
  | { kind: 'missing' }
  /** `resolvedDev`: the device number (`major:minor`) of the block device node at the end of the chain. */
  | { kind: 'link'; target: string; resolvesTo: string; resolvedType: FileType | null; resolvedDev?: string | null }
  | { kind: 'not-a-link'; type: FileType };

/** A disk with the PV's WWN, seen under another name. */
export interface Sighting {
  device: string;
  via: string;
  /**
   * The device number (`major:minor`): from sysfs's `dev` for a /sys/block sighting (the kernel's
   * device), from the node itself for a link's (what opening the link really opens); null when
   * unknown. A link shows the disk only when both agree.
   */
  dev?: string | null;
}

export interface PlaceholderFacts {
  action: 'place' | 'release';
  /**
   * Who asked for a release: the detector (verified: the disk must be back) or an operator with
   * force (not verified; recorded). A release job from before this field is a detector's.
   */
  release: { by: 'detector' | 'operator'; force: boolean; asked: string };
  jobId: string;
  observedAt: string;
  node: string;
  /** The agent that observed: must be the job's node. */
  ranOn: string;
  pv: string;
  path: string;
  optIn: { label: string; value: string | null; optedIn: boolean };
  /** The PV's disk WWN from its link name; null when the name carries none we can read. */
  wwn: string | null;
  pathState: PathState;
  sightings: Sighting[];
  /** WWNs of every disk the node shows in sysfs. */
  disksPresent: string[];
  record: PlaceholderRecord | null;
  recordUnreadable: boolean;
  /** Loop devices recorded for other PVs (reserved even while not attached yet). */
  reservedLoops: string[];
  attached: LoopAttachment[];
  /**
   * What still uses each loop device a release would detach (ours and the recorded one), in words
   * (loop-holders.ts); null when not read: no release can follow from this job (it reads every
   * process's open files, so a placement that finds its placeholder in place does not pay for it).
   */
  holders: Record<string, string[]> | null;
  /**
   * `outside`: why the image path may not be touched (its directory resolves outside STATE_DIR,
   * or it is not a regular file); unset when it may (image-path.ts).
   */
  image: { path: string; seenByCommandsAs: string; size: number | null; outside?: string };
}
