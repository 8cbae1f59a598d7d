// The questions triage and the runbooks ask the cluster, behind one small port so triage stays
// pure and testable. The Kubernetes adapter implements it against the API server
// (src/adapters/kube/api/kube-lookups.ts); tests and a cluster-less local run use the in-memory one below.
// Both answer the same shared contract test (test/support/lookups-contract.ts).

export interface NamespacedName {
  namespace: string;
  name: string;
}

interface NodeAddress {
  /** InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS. */
  type: string;
  address: string;
}

export interface NodeTaint {
  key: string;
  value?: string;
  /** NoSchedule, PreferNoSchedule, NoExecute. */
  effect: string;
  /** ISO 8601; the API server sets it for NoExecute taints only. */
  timeAdded?: string;
}

export interface NodeInfo {
  name: string;
  uid?: string;
  addresses: NodeAddress[];
  /** status of the Ready condition, when the node reports one. */
  ready?: 'True' | 'False' | 'Unknown';
  /**
   * lastTransitionTime of the Ready condition (ISO 8601): since when `ready` has had its value,
   * as the API server recorded it. Unset when absent or unreadable: "since when" is then unknown.
   */
  readySince?: string;
  /** spec.taints (e.g. `node.kubernetes.io/out-of-service`, set by an operator on a node that is shut down). */
  taints?: NodeTaint[];
  /** status.nodeInfo.bootID: changes on every boot; the identity of a node recovery. */
  bootId?: string;
  labels: Record<string, string>;
}

export interface PersistentVolumeInfo {
  name: string;
  volumeMode: 'Block' | 'Filesystem';
  /** Set for Local PVs: spec.local.path and the single node its nodeAffinity allows. */
  local?: { path: string; node?: string };
  claim?: NamespacedName;
  uid?: string;
  /** Available, Bound, Released, Failed. */
  phase?: string;
  accessModes?: string[];
  /** CSI volumes: driver, volume handle and the driver's volumeAttributes. */
  csi?: { driver: string; volumeHandle: string; attributes: Record<string, string> };
  /** RBD images: ceph-csi (`pool` + `imageName` attributes) or the in-tree rbd plugin. */
  rbd?: { pool: string; image: string };
  /** LUN WWN/WWID when the PV records one (in-tree FC `wwids`, a CSI attribute naming it). */
  wwn?: string;
  /** spec.csi.readOnly, or `ro` in spec.mountOptions: the volume is read-only by request. */
  readOnly?: boolean;
}

export interface PersistentVolumeClaimInfo extends NamespacedName {
  uid?: string;
  volumeName?: string;
  accessModes: string[];
  phase?: string;
}

interface ContainerWaiting {
  container: string;
  /** ContainerCreating, CreateContainerError, ... */
  reason: string;
  message?: string;
}

export interface PodInfo extends NamespacedName {
  uid?: string;
  node?: string;
  /** Pending, Running, Succeeded, Failed, Unknown. */
  phase?: string;
  /** Names of the PVCs (same namespace) its volumes use. */
  claims: string[];
  waiting: ContainerWaiting[];
  /** The controlling owner reference (ReplicaSet, StatefulSet, ...). */
  controller?: { kind: string; name: string };
  /** metadata.resourceVersion: the precondition of a delete. */
  resourceVersion?: string;
  /** metadata.deletionTimestamp (ISO 8601): the pod is terminating. */
  deletionTimestamp?: string;
  /**
   * PVC names the pod asks to use read-only: its volume says `persistentVolumeClaim.readOnly`, or
   * every container that mounts it mounts it `readOnly`.
   */
  readOnlyClaims?: string[];
}

export interface VolumeAttachmentInfo {
  name: string;
  attacher: string;
  node: string;
  /** spec.source.persistentVolumeName; absent for inline (migrated) volumes. */
  pv?: string;
  attached: boolean;
  /** status.attachmentMetadata as the driver wrote it. */
  metadata: Record<string, string>;
  /** The LUN WWN/serial, when the driver records it in attachmentMetadata. */
  wwn?: string;
}

export interface DeploymentInfo extends NamespacedName {
  strategy: 'RollingUpdate' | 'Recreate';
  /** As written (number or percentage); the API server defaults it to 25% for RollingUpdate. */
  maxSurge?: number | string;
  maxUnavailable?: number | string;
  replicas?: number;
  /** PVC names the pod template mounts. */
  claims: string[];
}

export interface ClusterLookups {
  node(name: string): Promise<NodeInfo | undefined>;
  /**
   * Every node listing this address (InternalIP, ExternalIP, Hostname...) in status.addresses:
   * how an RBD watcher becomes a node. All of them, not the first: two Node objects with one
   * address (a node replaced under a new name, its old object left behind) make the owner
   * ambiguous, and the caller must see that.
   */
  nodesByAddress(address: string): Promise<NodeInfo[]>;
  persistentVolume(name: string): Promise<PersistentVolumeInfo | undefined>;
  /** The Local PV whose spec.local.path is `path` (and whose node is `node`, when given). */
  persistentVolumeByLocalPath(path: string, node?: string): Promise<PersistentVolumeInfo | undefined>;
  /** The PVC bound to this PV (its claimRef, confirmed by the PVC's volumeName). */
  claimOfVolume(pv: string): Promise<PersistentVolumeClaimInfo | undefined>;
  /** Pods (any node, any phase) whose volumes use the PVC bound to this PV. */
  podsUsingVolume(pv: string): Promise<PodInfo[]>;
  /** Pods scheduled on `node` that use this PVC, with their phase: the multi-attach interlock. */
  podsOnNodeUsingClaim(node: string, claim: NamespacedName): Promise<PodInfo[]>;
  volumeAttachmentsOnNode(node: string): Promise<VolumeAttachmentInfo[]>;
  /** The Deployment controlling this pod through its ReplicaSet, for the RBD prevention advice. */
  deploymentOfPod(pod: NamespacedName): Promise<DeploymentInfo | undefined>;
  /**
   * The PVs bound to the pod's claims (unknown pod: none), bound both ways: the PVC's volumeName
   * names the PV and the PV's claimRef names that PVC. A PVC that merely names someone else's PV
   * (and stays Pending) does not count. containerd's "not a device node" names neither the PV nor
   * the path, only the pod: this is how triage finds its Local PVs; and how it confirms that a
   * pod's Event is about a volume that pod really uses.
   */
  volumesOfPod(pod: NamespacedName): Promise<PersistentVolumeInfo[]>;
  /** Every PV (the RBD runbook finds the PV of a pool/image among them). */
  persistentVolumes(): Promise<PersistentVolumeInfo[]>;
  /** Pods scheduled on `node`, any phase and namespace (the node half of the RBD runbook). */
  podsOnNode(node: string): Promise<PodInfo[]>;
  /**
   * Every pod of the cluster, any namespace, node and phase: whether a pod with some UID exists
   * (orphaned-pod-volumes; the API has no field selector on metadata.uid). Read from the API
   * server's watch cache (resourceVersion=0), once per scan.
   */
  allPods(): Promise<PodInfo[]>;
  /** One pod, read fresh (the re-check before a pod is deleted); undefined when it does not exist. */
  pod(ref: NamespacedName): Promise<PodInfo | undefined>;
}

const nsKey = (r: NamespacedName): string => `${r.namespace}/${r.name}`;

export class InMemoryLookups implements ClusterLookups {
  private readonly pvs = new Map<string, PersistentVolumeInfo>();
  private readonly nodes = new Map<string, NodeInfo>();
  private readonly claims = new Map<string, PersistentVolumeClaimInfo>();
  private readonly pods: PodInfo[] = [];
  private readonly attachments: VolumeAttachmentInfo[] = [];
  /** ReplicaSet namespace/name -> controlling Deployment name. */
  private readonly replicaSetOwner = new Map<string, string>();
  private readonly deployments = new Map<string, DeploymentInfo>();

  constructor(pvs: readonly PersistentVolumeInfo[] = []) {
    for (const pv of pvs) this.pvs.set(pv.name, pv);
  }

  addPersistentVolume(pv: PersistentVolumeInfo): this {
    this.pvs.set(pv.name, pv);
    return this;
  }
  addNode(node: NodeInfo): this {
    this.nodes.set(node.name, node);
    return this;
  }
  addClaim(claim: PersistentVolumeClaimInfo): this {
    this.claims.set(nsKey(claim), claim);
    return this;
  }
  addPod(pod: PodInfo): this {
    this.pods.push(pod);
    return this;
  }
  addVolumeAttachment(va: VolumeAttachmentInfo): this {
    this.attachments.push(va);
    return this;
  }
  addReplicaSet(rs: NamespacedName, deployment: string | undefined): this {
    if (deployment) this.replicaSetOwner.set(nsKey(rs), deployment);
    return this;
  }
  addDeployment(d: DeploymentInfo): this {
    this.deployments.set(nsKey(d), d);
    return this;
  }

  async node(name: string): Promise<NodeInfo | undefined> {
    return this.nodes.get(name);
  }

  async nodesByAddress(address: string): Promise<NodeInfo[]> {
    return [...this.nodes.values()].filter((n) => n.addresses.some((a) => a.address === address));
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

  async claimOfVolume(pv: string): Promise<PersistentVolumeClaimInfo | undefined> {
    const ref = this.pvs.get(pv)?.claim;
    const claim = ref ? this.claims.get(nsKey(ref)) : undefined;
    return claim && (claim.volumeName === undefined || claim.volumeName === pv) ? claim : undefined;
  }

  async podsUsingVolume(pv: string): Promise<PodInfo[]> {
    const claim = await this.claimOfVolume(pv);
    if (!claim) return [];
    return this.pods.filter((p) => p.namespace === claim.namespace && p.claims.includes(claim.name));
  }

  async persistentVolumes(): Promise<PersistentVolumeInfo[]> {
    return [...this.pvs.values()];
  }

  async podsOnNode(node: string): Promise<PodInfo[]> {
    return this.pods.filter((p) => p.node === node);
  }

  async allPods(): Promise<PodInfo[]> {
    return [...this.pods];
  }

  async pod(ref: NamespacedName): Promise<PodInfo | undefined> {
    return this.pods.find((p) => p.namespace === ref.namespace && p.name === ref.name);
  }

  async volumesOfPod(pod: NamespacedName): Promise<PersistentVolumeInfo[]> {
    const p = this.pods.find((x) => x.namespace === pod.namespace && x.name === pod.name);
    if (!p) return [];
    return p.claims.flatMap((name) => {
      const volume = this.claims.get(nsKey({ namespace: pod.namespace, name }))?.volumeName;
      const pv = volume ? this.pvs.get(volume) : undefined;
      return pv && pv.claim?.namespace === pod.namespace && pv.claim.name === name ? [pv] : [];
    });
  }

  async podsOnNodeUsingClaim(node: string, claim: NamespacedName): Promise<PodInfo[]> {
    return this.pods.filter((p) => p.node === node && p.namespace === claim.namespace && p.claims.includes(claim.name));
  }

  async volumeAttachmentsOnNode(node: string): Promise<VolumeAttachmentInfo[]> {
    return this.attachments.filter((va) => va.node === node);
  }

  async deploymentOfPod(pod: NamespacedName): Promise<DeploymentInfo | undefined> {
    const p = this.pods.find((x) => x.namespace === pod.namespace && x.name === pod.name);
    if (p?.controller?.kind !== 'ReplicaSet') return undefined;
    const dep = this.replicaSetOwner.get(nsKey({ namespace: pod.namespace, name: p.controller.name }));
    return dep ? this.deployments.get(nsKey({ namespace: pod.namespace, name: dep })) : undefined;
  }
}
