// What the cluster half may do on its own. Defaults are the cautious ones.

export type FencingMode = 'off' | 'approval' | 'on';

export interface StaleMappingPolicy {
  /**
   * Fencing a watcher whose node is gone (NotReady, unknown address) with `ceph osd blocklist
   * add`: `off` refuses and says how to do it by hand, `approval` refuses as "needs approval"
   * (the approval flow is a separate issue), `on` fences. Default `approval`.
   */
  fencing: FencingMode;
  /** How long a blocklist entry lasts; Ceph drops it afterwards. Default 3600 s. */
  blocklistExpirySeconds: number;
  /** How long verify waits for a fenced watcher to vanish (observed: ~30 ms). Default 10 s. */
  watcherGoneTimeoutMs: number;
}

export const DEFAULT_STALE_MAPPING_POLICY: StaleMappingPolicy = {
  fencing: 'approval',
  blocklistExpirySeconds: 3600,
  watcherGoneTimeoutMs: 10_000,
};
