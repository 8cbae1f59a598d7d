// The questions triage (and later the runbooks) ask the cluster, behind one small port so triage
// stays pure and testable. The Kubernetes adapter implements it against the API server; tests and
// a cluster-less local run use the in-memory implementation.

export interface PersistentVolumeInfo {
  name: string;
  volumeMode: 'Block' | 'Filesystem';
  /** Set for Local PVs: spec.local.path and the single node its nodeAffinity allows. */
  local?: { path: string; node?: string };
  claim?: { namespace: string; name: string };
}

export interface ClusterLookups {
  persistentVolume(name: string): Promise<PersistentVolumeInfo | undefined>;
  /** The Local PV whose spec.local.path is `path` (and whose node is `node`, when given). */
  persistentVolumeByLocalPath(path: string, node?: string): Promise<PersistentVolumeInfo | undefined>;
}

export class InMemoryLookups implements ClusterLookups {
  private readonly pvs = new Map<string, PersistentVolumeInfo>();

  constructor(pvs: readonly PersistentVolumeInfo[] = []) {
    for (const pv of pvs) this.pvs.set(pv.name, pv);
  }

  addPersistentVolume(pv: PersistentVolumeInfo): void {
    this.pvs.set(pv.name, pv);
  }

  async persistentVolume(name: string): Promise<PersistentVolumeInfo | undefined> {
    return this.pvs.get(name);
  }

  async persistentVolumeByLocalPath(path: string, node?: string): Promise<PersistentVolumeInfo | undefined> {
    for (const pv of this.pvs.values()) {
      if (pv.local?.path === path && (node === undefined || pv.local.node === undefined || pv.local.node === node)) return pv;
    }
    return undefined;
  }
}
