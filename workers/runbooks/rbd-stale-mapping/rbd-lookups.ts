import { InMemoryLookups, type ClusterLookups, type PersistentVolumeInfo } from '../../../src/adapters/kube/lookups.ts';

// What the cluster half asks Kubernetes: which node has the watcher's address, which PV/PVC the
// image backs, which pods use it (with node and phase), and the Deployment behind a pod. Four of
// these are ClusterLookups methods; finding the PV of an RBD image is not yet, so it is one more
// method here. The cluster worker wires it to src/adapters/kube (a PV list filtered on spec.rbd/csi).

export type RbdLookups = Pick<ClusterLookups, 'nodesByAddress' | 'claimOfVolume' | 'podsUsingVolume' | 'deploymentOfPod'> & {
  /** The PV backed by this image: ceph-csi (`pool` + `imageName` attributes) or in-tree rbd. */
  volumeOfImage(pool: string, image: string): Promise<PersistentVolumeInfo | undefined>;
};

/** Adds `volumeOfImage` to any ClusterLookups, given a way to list PVs. */
export function rbdLookups(lookups: Omit<RbdLookups, 'volumeOfImage'>, listVolumes: () => Promise<readonly PersistentVolumeInfo[]>): RbdLookups {
  return {
    nodesByAddress: (a) => lookups.nodesByAddress(a),
    claimOfVolume: (pv) => lookups.claimOfVolume(pv),
    podsUsingVolume: (pv) => lookups.podsUsingVolume(pv),
    deploymentOfPod: (p) => lookups.deploymentOfPod(p),
    async volumeOfImage(pool, image) {
      return (await listVolumes()).find((pv) => pv.rbd?.pool === pool && pv.rbd.image === image);
    },
  };
}

/** In memory, for tests and a cluster-less run: InMemoryLookups plus the PV index. */
export class InMemoryRbdLookups extends InMemoryLookups implements RbdLookups {
  readonly #volumes: PersistentVolumeInfo[] = [];

  constructor(pvs: readonly PersistentVolumeInfo[] = []) {
    super();
    for (const pv of pvs) this.addPersistentVolume(pv);
  }

  override addPersistentVolume(pv: PersistentVolumeInfo): this {
    super.addPersistentVolume(pv);
    this.#volumes.push(pv);
    return this;
  }

  async volumeOfImage(pool: string, image: string): Promise<PersistentVolumeInfo | undefined> {
    return this.#volumes.find((pv) => pv.rbd?.pool === pool && pv.rbd.image === image);
  }
}
