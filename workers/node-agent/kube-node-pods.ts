import type { ClusterLookups, PodInfo } from '../../src/adapters/kube/lookups.ts';
import { RefusedError } from '../../src/core/errors.ts';
import type { NodePods } from '../runbooks/rbd-unmap/index.ts';

/** The pods Kubernetes has on a node, from the API server. */
export class KubeNodePods implements NodePods {
  readonly #lookups: Pick<ClusterLookups, 'podsOnNode'>;

  constructor(lookups: Pick<ClusterLookups, 'podsOnNode'>) {
    this.#lookups = lookups;
  }

  podsOnNode(node: string): Promise<PodInfo[]> {
    return this.#lookups.podsOnNode(node);
  }
}

/**
 * Without cluster access the agent cannot tell a stale kubelet mount (its pod is gone) from a live
 * one: an empty pod list would make every mount look stale. So the RBD node half refuses.
 */
export class UnknownNodePods implements NodePods {
  async podsOnNode(): Promise<PodInfo[]> {
    throw new RefusedError(['the pods on this node cannot be known without access to the Kubernetes API, so stale mounts cannot be told from live ones']);
  }
}
