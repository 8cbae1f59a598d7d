import type { AppsApi, CoreApi, StorageApi } from './apis.ts';
import type {
  ClusterLookups,
  DeploymentInfo,
  NamespacedName,
  NodeInfo,
  PersistentVolumeClaimInfo,
  PersistentVolumeInfo,
  PodInfo,
  VolumeAttachmentInfo,
} from '../lookups.ts';
import { findNodesByAddress, readNode } from './nodes.ts';
import { listAllPods, listPodsOnNode, listPodsOnNodeUsingClaim, listPodsUsingClaim, readPod, readVolumesOfPod } from './pods.ts';
import { listVolumeAttachmentsOnNode } from './attachments.ts';
import { findLocalPersistentVolume, listPersistentVolumes, readClaimOfVolume, readPersistentVolume } from './volumes.ts';
import { readDeploymentOfPod } from './workloads.ts';

// ClusterLookups against the API server. Every answer is read fresh: runbooks ask a handful of
// questions per job and act on the answer, so a stale cache would be the wrong trade. API errors
// (other than 404) propagate: "could not ask" must never read as "nothing there".

export interface KubeApis {
  core: CoreApi;
  storage: StorageApi;
  apps: AppsApi;
}

export class KubeLookups implements ClusterLookups {
  private readonly api: KubeApis;

  constructor(api: KubeApis) {
    this.api = api;
  }

  node(name: string): Promise<NodeInfo | undefined> {
    return readNode(this.api.core, name);
  }
  nodesByAddress(address: string): Promise<NodeInfo[]> {
    return findNodesByAddress(this.api.core, address);
  }
  persistentVolume(name: string): Promise<PersistentVolumeInfo | undefined> {
    return readPersistentVolume(this.api.core, name);
  }
  persistentVolumeByLocalPath(path: string, node?: string): Promise<PersistentVolumeInfo | undefined> {
    return findLocalPersistentVolume(this.api.core, path, node);
  }
  claimOfVolume(pv: string): Promise<PersistentVolumeClaimInfo | undefined> {
    return readClaimOfVolume(this.api.core, pv);
  }
  async podsUsingVolume(pv: string): Promise<PodInfo[]> {
    const claim = await this.claimOfVolume(pv);
    return claim ? listPodsUsingClaim(this.api.core, claim) : [];
  }
  podsOnNodeUsingClaim(node: string, claim: NamespacedName): Promise<PodInfo[]> {
    return listPodsOnNodeUsingClaim(this.api.core, node, claim);
  }
  volumeAttachmentsOnNode(node: string): Promise<VolumeAttachmentInfo[]> {
    return listVolumeAttachmentsOnNode(this.api.storage, node);
  }
  deploymentOfPod(pod: NamespacedName): Promise<DeploymentInfo | undefined> {
    return readDeploymentOfPod(this.api.core, this.api.apps, pod);
  }
  volumesOfPod(pod: NamespacedName): Promise<PersistentVolumeInfo[]> {
    return readVolumesOfPod(this.api.core, pod);
  }
  persistentVolumes(): Promise<PersistentVolumeInfo[]> {
    return listPersistentVolumes(this.api.core);
  }
  podsOnNode(node: string): Promise<PodInfo[]> {
    return listPodsOnNode(this.api.core, node);
  }
  allPods(): Promise<PodInfo[]> {
    return listAllPods(this.api.core);
  }

  pod(ref: NamespacedName): Promise<PodInfo | undefined> {
    return readPod(this.api.core, ref);
  }
}
