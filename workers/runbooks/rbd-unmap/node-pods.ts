import type { PodInfo } from '../../../src/adapters/kube/lookups.ts';

// Which pods Kubernetes has on this node (any phase, with their PVCs): the node half's own
// multi-attach check and how it tells a stale kubelet mount (its pod is gone) from a live one.
// The node agent wires it to the API (pods with spec.nodeName=<node>); tests use the in-memory one.

export interface NodePods {
  podsOnNode(node: string): Promise<PodInfo[]>;
}

export class InMemoryNodePods implements NodePods {
  readonly #pods: PodInfo[];

  constructor(pods: readonly PodInfo[] = []) {
    this.#pods = [...pods];
  }

  add(pod: PodInfo): this {
    this.#pods.push(pod);
    return this;
  }

  async podsOnNode(node: string): Promise<PodInfo[]> {
    return this.#pods.filter((p) => p.node === node);
  }
}

/** Pending, Running and Unknown pods may (still) use their volumes; Succeeded and Failed do not. */
export const mayRun = (p: Pick<PodInfo, 'phase'>): boolean => p.phase === undefined || p.phase === 'Pending' || p.phase === 'Running' || p.phase === 'Unknown';
