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
  /**
   * A watcher's node must have been NotReady (Ready False/Unknown, by the condition's
   * lastTransitionTime) this long before its client is fenced; a younger NotReady parks the job
   * until then. A node tainted `node.kubernetes.io/out-of-service` needs no wait. Default 300 s.
   */
  fenceNotReadySeconds: number;
  /**
   * Networks (CIDR) whose watchers may be fenced though no node lists their address (a known
   * external client network). Default none: an address of no node is refused.
   */
  fenceCidrs: string[];
  /** How long verify waits for a fenced watcher to vanish (far less in the lab: bench/README.md). Default 10 s. */
  watcherGoneTimeoutMs: number;
  /**
   * After handing the node half to a Ready node: how long verify waits for that node's watch to
   * disappear (the node agent unmaps within seconds; the lab's figure: bench/README.md).
   * Still there after it: verification fails and the job is retried, each retry re-checking
   * from scratch (a watch gone by then is "freed itself"). 0: only check the hand-over.
   * Default 120 s.
   */
  handoffVerifyMs: number;
}

export const DEFAULT_STALE_MAPPING_POLICY: StaleMappingPolicy = {
  fencing: 'approval',
  blocklistExpirySeconds: 3600,
  fenceNotReadySeconds: 300,
  fenceCidrs: [],
  watcherGoneTimeoutMs: 10_000,
  handoffVerifyMs: 120_000,
};
