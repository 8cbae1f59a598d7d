import type { Opener } from '../../host/proc-facts.ts';

export type { Opener };
import type { IntentRecord } from './intents.ts';
import type { MultipathPath } from './multipath-ll.ts';

// Everything plan() decides on, per map. Plain data: unit-test fixtures are these objects.

export interface PathFacts extends MultipathPath {
  /** /sys/block/<dev>/device/state, null when unreadable or the disk is gone. */
  sysfsState: string | null;
  /** Multipath-style WWID from /sys/block/<dev>/device/wwid, null when unreadable. */
  sysfsWwid: string | null;
}

/** How long every path of a map has been dead, as this agent saw it over its jobs. */
interface DeadSince {
  since: string;
  samples: number;
  /** Dead before the node's last reboot and still dead after it. */
  acrossBoot: boolean;
}

/** A SCSI disk that an intent record names, found again by H:C:T:L and WWID after its map is gone. */
export interface OrphanDisk {
  name: string;
  hctl: string | null;
  wwid: string | null;
  /** `major:minor` from /sys/block/<disk>/dev. */
  devT: string | null;
  holders: string[];
  mounts: Array<{ mountPoint: string; how: string; pids: number[] }>;
  openers: Opener[];
}

export interface IntentFacts {
  record: IntentRecord;
  /** A dm device with uuid mpath-<wwid> exists (sysfs) or multipath -ll lists the WWID. */
  mapPresent: boolean;
  /** The record's disks still present with the same identity (only looked for when the map is gone). */
  orphans: OrphanDisk[];
}

type ProbeOutcome = 'readable' | 'io-error' | 'timed-out' | 'not-run' | 'skipped-dry-run';

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
  /** Processes with the map itself open (these make its dm open count). */
  openers: Opener[];
  /** Processes with one of its path disks open directly. */
  diskOpeners: Opener[];
  probe: ProbeFacts;
  /** /dev/disk/by-id links naming this LUN or leading to the map or its disks. */
  byIdLinks: string[];
  /** Loop devices whose backing file is the map (/sys/block/loopN/loop/backing_file). */
  loopBacked: string[];
  /** LIO backstores exporting the map (/sys/kernel/config/target/core/<hba>/<dev>/udev_path). */
  exportedBy: string[];
  /** Every path dead since when, over how many of this agent's observations; null when a path is not dead. */
  deadSince: DeadSince | null;
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
  /** /proc/sys/kernel/random/boot_id, null when unreadable. */
  bootId: string | null;
  /** Intent records of destructive sequences on this node, with what is left of them. */
  intents: IntentFacts[];
  /** Intent record files that do not parse: reported, never acted on. */
  unreadableIntents: string[];
  /** Things observe noticed that do not block anything on their own (an observation file started over). */
  observeNotes: string[];
}
