// The runbook's knobs, as data (CONVENTIONS 4). Every field has its default here.

export interface ResidualPolicy {
  /**
   * More residual maps than this in one job: refuse and ask for a human (a node that lost that
   * many LUNs at once is more likely a storage outage than leftovers). Default 8.
   */
  maxMapsPerJob: number;
  /**
   * Releasing a dead map's queued I/O (`dmsetup message <map> 0 fail_if_no_path`) is high-risk:
   * 'auto' does it for maps that passed every other interlock; 'require-approval' leaves such
   * maps alone and says an approval is needed. Default 'auto' (issue 5).
   */
  releaseQueuedIo: 'auto' | 'require-approval';
  /**
   * When the VolumeAttachments of the node cannot be known: 'proceed' (the other interlocks
   * still hold; the result says the check was skipped) or 'refuse'. Default 'proceed'.
   */
  attachmentsUnknown: 'proceed' | 'refuse';
  /** Hard deadline of one read probe (all probes run in parallel). Default 10 s. */
  probeTimeoutMs: number;
  /** After releasing queued I/O, how long to wait for the open count to fall to 0. Default 20 s. */
  openCountWaitMs: number;
  /** Deadline of each multipath/dmsetup command. Default 30 s. */
  commandTimeoutMs: number;
  /** How long verify waits for udev to remove the /dev/disk/by-id links. Default 15 s. */
  linkWaitMs: number;
}

export const DEFAULT_POLICY: ResidualPolicy = {
  maxMapsPerJob: 8,
  releaseQueuedIo: 'auto',
  attachmentsUnknown: 'proceed',
  probeTimeoutMs: 10_000,
  openCountWaitMs: 20_000,
  commandTimeoutMs: 30_000,
  linkWaitMs: 15_000,
};
