import type { MultipathPath } from './multipath-ll.ts';

// Everything plan() decides on, per map. Plain data: unit-test fixtures are these objects.

export interface PathFacts extends MultipathPath {
  /** /sys/block/<dev>/device/state, null when unreadable or the disk is gone. */
  sysfsState: string | null;
  /** Multipath-style WWID from /sys/block/<dev>/device/wwid, null when unreadable. */
  sysfsWwid: string | null;
}

export interface Opener {
  pid: number;
  comm: string;
  /** /proc/<pid>/stat state: D = uninterruptible sleep (stuck on the map's queued I/O). */
  state: string;
  /** How many of its file descriptors point at the map. */
  fds: number;
}

export type ProbeOutcome = 'readable' | 'io-error' | 'timed-out' | 'not-run' | 'skipped-dry-run';

export interface ProbeFacts {
  outcome: ProbeOutcome;
  durationMs: number;
  exitCode: number | null;
  /** Probe processes still alive after SIGKILL (D state): reported, never waited for. */
  stuckPids: number[];
  detail: string;
}

export interface MapFacts {
  name: string;
  wwid: string;
  dm: string | null;
  /** `major:minor` from /sys/block/dm-N/dev. */
  majorMinor: string | null;
  /** /sys/block/dm-N/dm/uuid (`mpath-<wwid>` for a multipath map). */
  dmUuid: string | null;
  vendorProduct: string | null;
  features: string | null;
  queueIfNoPath: boolean;
  paths: PathFacts[];
  /** Lines of `multipath -ll` about this map that did not parse, and other disagreements. */
  problems: string[];
  /** /sys/block/dm-N/slaves */
  slaves: string[];
  /** /sys/block/dm-N/holders (a partition map, LVM, another dm device on top). */
  holders: string[];
  /** `dmsetup info -c` Open; null when dmsetup did not list the map. */
  openCount: number | null;
  /** Mounts of the map or of one of its disks, in any mount namespace. */
  mounts: Array<{ mountPoint: string; how: string; pids: number[] }>;
  /** Listed in /proc/swaps. */
  swap: boolean;
  openers: Opener[];
  probe: ProbeFacts;
  /** /dev/disk/by-id links naming this LUN or leading to the map or its disks. */
  byIdLinks: string[];
}

export type AttachmentFacts = { known: true; wwids: string[] } | { known: false; why: string };

export interface ResidualFacts {
  node: string;
  ranOn: string;
  /** The mode observe ran in: a dry-run does not probe maps that queue I/O. */
  mode: 'dry-run' | 'enforce';
  observedAt: string;
  /** `multipath -ll` ran and was understood; false with why when not. */
  listing: { ok: true } | { ok: false; why: string };
  maps: MapFacts[];
  attachments: AttachmentFacts;
  /** Mount namespaces whose mountinfo was read; pids whose mountinfo could not be read. */
  mountNamespaces: number;
  unreadableMountinfo: number[];
  /** Whether `multipathd show maps json` agreed with `multipath -ll` (null: not available). */
  multipathdAgrees: boolean | null;
}
