// What this runbook asks the API server (the node agent's lookups, src/adapters/kube/rbac.ts):
// whether any pod anywhere has a UID, and which PVs the node's VolumeAttachments name. A failure
// throws: the runbook turns it into "unknown", which refuses (pod-api-unknown, volume-still-staged).

export interface OrphanKube {
  /** Every pod the API server has (any namespace, node and phase): UID -> `namespace/name`. */
  podsByUid(): Promise<Readonly<Record<string, string>>>;
  /** The PVs named by the VolumeAttachments of `node`. */
  attachedPvs(node: string): Promise<string[]>;
}

/** Without cluster access nothing can be known: every orphan is refused (pod-api-unknown). */
export class UnknownOrphanKube implements OrphanKube {
  async podsByUid(): Promise<Record<string, string>> {
    throw new Error('no access to the Kubernetes API: whether a pod has this UID cannot be known');
  }
  async attachedPvs(): Promise<string[]> {
    throw new Error('no access to the Kubernetes API: the VolumeAttachments of this node cannot be known');
  }
}

export class InMemoryOrphanKube implements OrphanKube {
  readonly pods: Record<string, string>;
  readonly attached: Record<string, string[]>;
  constructor(pods: Record<string, string> = {}, attached: Record<string, string[]> = {}) {
    this.pods = pods;
    this.attached = attached;
  }
  async podsByUid(): Promise<Record<string, string>> {
    return { ...this.pods };
  }
  async attachedPvs(node: string): Promise<string[]> {
    return [...(this.attached[node] ?? [])];
  }
}
