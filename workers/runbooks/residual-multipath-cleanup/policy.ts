// The runbook's knobs, as data, never decided inside a handler. Every field has its default here.

export interface ResidualPolicy {
  /**
   * More residual maps than this in one job: refuse and ask for a human (a node that lost that
   * many LUNs at once is more likely a storage outage than leftovers). Default 8.
   */
  maxMapsPerJob: number;
  /**
   * Releasing a dead map's queued I/O (`dmsetup message <map> 0 fail_if_no_path`) is high-risk:
   * 'auto' does it for maps that passed every other interlock; 'require-approval' leaves such
   * maps alone and says an approval is needed. Default 'auto'.
   */
  releaseQueuedIo: 'auto' | 'require-approval';
  /**
   * When the VolumeAttachments of the node cannot be known: 'proceed' (the other interlocks
   * still hold; every step's evidence says the check was skipped by policy) or 'refuse'.
   * Default 'refuse': unknown means refuse.
   */
  attachmentsUnknown: 'proceed' | 'refuse';
  /**
   * A map's queued I/O is released only once every path has been dead this long, over at least
   * two observations by this agent (kept in its state directory), or across a reboot. A
   * transient all-paths-down comes back within it. Default 120 s.
   */
  allDeadGraceMs: number;
  /**
   * Process names (comm) of openers that are themselves victims of dead paths and may be
   * released: udev workers, blkid, lsblk, multipath tools (DEFAULT_VICTIM_OPENERS, plus
   * RESIDUAL_VICTIM_OPENERS). Any other opener, in D state or not, is a live user.
   */
  victimOpeners: readonly string[];
  /** Hard deadline of one read probe (all probes run in parallel). Default 10 s. */
  probeTimeoutMs: number;
  /** After releasing queued I/O, how long to wait for the open count to fall to 0. Default 20 s. */
  openCountWaitMs: number;
  /** Deadline of each multipath/dmsetup command. Default 30 s. */
  commandTimeoutMs: number;
  /** How long verify waits for udev to remove the /dev/disk/by-id links. Default 15 s. */
  linkWaitMs: number;
}

/**
 * Openers known to be victims of a dead map, never its users: udev's workers and the probes it
 * runs on a new device (blkid, scsi_id, pvscan for LVM autoactivation), listing tools, the
 * multipath and device-mapper tools. comm is at most 15 characters (the kernel truncates).
 */
export const DEFAULT_VICTIM_OPENERS: readonly string[] = [
  '(udev-worker)',
  'systemd-udevd',
  'udevd',
  'blkid',
  'lsblk',
  'scsi_id',
  'pvscan',
  'multipath',
  'multipathd',
  'kpartx',
  'dmsetup',
];

export const DEFAULT_POLICY: ResidualPolicy = {
  maxMapsPerJob: 8,
  releaseQueuedIo: 'auto',
  attachmentsUnknown: 'refuse',
  allDeadGraceMs: 120_000,
  victimOpeners: DEFAULT_VICTIM_OPENERS,
  probeTimeoutMs: 10_000,
  openCountWaitMs: 20_000,
  commandTimeoutMs: 30_000,
  linkWaitMs: 15_000,
};
