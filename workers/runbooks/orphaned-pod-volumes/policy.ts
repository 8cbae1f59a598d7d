// What the node half may do on its own (configuration: KUBELET_ROOT_DIR, ORPHAN_MIN_AGE_SECONDS).

export interface OrphanPolicy {
  /** kubelet's --root-dir. Default `/var/lib/kubelet`. */
  kubeletRoot: string;
  /** An orphan is acted on once seen in two looks this far apart. Default 600 s. */
  minAgeMs: number;
}

export const DEFAULT_ORPHAN_POLICY: OrphanPolicy = { kubeletRoot: '/var/lib/kubelet', minAgeMs: 600_000 };
