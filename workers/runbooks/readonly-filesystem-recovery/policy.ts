// The knobs of readonly-filesystem-recovery (docs/decisions/0008 §3), from the node agent's
// configuration (READONLY_*); defaults here for tests and a plain run.

export interface ReadonlyPolicy {
  /** kubelet's --root-dir (KUBELET_ROOT_DIR). */
  kubeletRoot: string;
  /** Every path active and the device readable for this long, over two observations, before a pod is deleted (READONLY_PATHS_BACK_SECONDS). */
  pathsBackMs: number;
  /** How long the verify looks for the old mount to go and the new one to be healthy (READONLY_VERIFY_SECONDS). */
  verifyMs: number;
  /** Between two looks of the verify. */
  verifyPollMs: number;
  /** Deadline of the direct read of the device (the residual-map probe's, RESIDUAL_PROBE_TIMEOUT_MS). */
  probeTimeoutMs: number;
  /** Deadline of every other command. */
  commandTimeoutMs: number;
}

export const DEFAULT_POLICY: ReadonlyPolicy = {
  kubeletRoot: '/var/lib/kubelet',
  pathsBackMs: 120_000,
  verifyMs: 300_000,
  verifyPollMs: 5_000,
  probeTimeoutMs: 10_000,
  commandTimeoutMs: 20_000,
};
