// What the node half may do on its own.

export interface UnmapPolicy {
  /**
   * `rbd unmap -o force` when a plain unmap stays busy: `never`, or `no-live-workload` (only
   * when what holds the device is left over from pods that no longer run here; never for a
   * running pod's process, a mount outside the kubelet root, or a process outside any pod).
   * Default `never`.
   */
  force: 'never' | 'no-live-workload';
  /** kubelet's --root-dir. Default `/var/lib/kubelet`. */
  kubeletRoot: string;
  /** Plain unmap attempts when busy (holders released between them). Default 3. */
  busyAttempts: number;
  /** Pause between them (udev/blkid open the device briefly after the last close). Default 1000 ms. */
  busyDelayMs: number;
}

export const DEFAULT_UNMAP_POLICY: UnmapPolicy = { force: 'never', kubeletRoot: '/var/lib/kubelet', busyAttempts: 3, busyDelayMs: 1000 };
