import { ApiKubeWrites } from '../../src/adapters/kube/api-kube-writes.ts';
import type { CoreWritesApi, EventsApi } from '../../src/adapters/kube/api/apis.ts';
import { type KubeApis, KubeLookups } from '../../src/adapters/kube/api/kube-lookups.ts';
import { JobEventRecorder } from '../../src/adapters/kube/job-events.ts';
import { claimOfJob } from '../../src/adapters/kube/job-claims.ts';
import type { ClusterLookups, PodInfo } from '../../src/adapters/kube/lookups.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import { restApis } from '../../src/adapters/kube/rest/apis.ts';
import { inClusterRest } from '../../src/adapters/kube/rest/in-cluster.ts';
import { KubeRest } from '../../src/adapters/kube/rest/transport.ts';
import type { KubeRead } from '../../src/adapters/kube/kube-coordination.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { inCluster } from '../../src/core/config/in-cluster.ts';
import { RefusedError } from '../../src/core/errors.ts';
import type { JobEventSink } from '../engine/job-event-sink.ts';
import type { KubeWrites } from '../kube-writes/kube-writes.ts';
import type { NodeLabels } from '../runbooks/local-pv-placeholder/node-labels.ts';
import type { OrphanKube } from '../runbooks/orphaned-pod-volumes/orphan-kube.ts';
import type { NodePods } from '../runbooks/rbd-unmap/node-pods.ts';
import type { AttachedVolumes } from '../runbooks/residual-multipath-cleanup/attached-volumes.ts';
import type { RecoveryLookups } from '../runbooks/readonly-filesystem-recovery/recovery-lookups.ts';

// What the node agent learns from the API server, in a pod (or with KUBECONFIG): its node's
// labels, VolumeAttachments and pods, and where its jobs' Events go. Elsewhere labels come from
// NODE_LABELS, attachments are unknown and the RBD node half refuses (it cannot tell stale mounts
// from live ones).

/** What the runbooks read from the cluster (registry.ts); each one missing has its answer there. */
export interface NodeRegistryDeps {
  /** Where the node's labels come from: the Kubernetes API in a cluster; NODE_LABELS otherwise. */
  nodeLabels?: NodeLabels;
  /** The node's VolumeAttachments as WWIDs: the Kubernetes API in a cluster; unknown otherwise. */
  attachedVolumes?: AttachedVolumes;
  /** The pods on the node: the Kubernetes API in a cluster; without it the RBD node half refuses. */
  nodePods?: NodePods;
  /**
   * Writes to the Kubernetes API (a pod of this node deleted, a step's Event): the API server in a
   * cluster; absent otherwise, and a runbook then passes NO_KUBE_WRITES (every write fails).
   */
  kube?: KubeWrites;
  /** Every pod's UID and the node's attached PVs: the Kubernetes API in a cluster; without it every orphan is refused. */
  orphanKube?: OrphanKube;
  /** Pods and PVs read fresh (readonly-filesystem-recovery); without them that runbook refuses. */
  recoveryLookups?: RecoveryLookups;
}

export interface NodeKube {
  inCluster: boolean;
  /** Plain GETs of the API server (coordination with kured, drains and medik8s: workers/engine/coordinate.ts). */
  read?: KubeRead;
  nodeLabels?: NodeLabels;
  events?: JobEventSink;
  /** What the runbooks read (registry.ts). */
  deps: NodeRegistryDeps;
}

export async function nodeKube(node: string, log: Logger): Promise<NodeKube> {
  const clients = await agentKubeApis();
  if (!clients) return { inCluster: false, deps: {} };
  // Typed as the node agent's list in src/adapters/kube/rbac.ts: another lookup would need another grant.
  const lookups: LookupsOf<'node-agent'> = new KubeLookups(clients);
  const nodeLabels = new KubeNodeLabels(lookups);
  return {
    inCluster: true,
    read: await agentKubeRead(),
    nodeLabels,
    events: new JobEventRecorder({ events: clients.events, instance: node, log, claimOf: claimOfJob(lookups) }),
    deps: {
      nodeLabels,
      attachedVolumes: new KubeAttachedVolumes(lookups),
      nodePods: new KubeNodePods(lookups),
      kube: new ApiKubeWrites({ component: 'node-agent', core: clients.writes, events: clients.events, instance: node }),
      orphanKube: new KubeOrphanKube(lookups),
      recoveryLookups: lookups,
    },
  };
}

// The node agent's Kubernetes access. In a pod (its DaemonSet): the small REST client of
// src/adapters/kube/rest/ with the service account, so @kubernetes/client-node's memory is never
// loaded on the nodes. With a KUBECONFIG (a developer's machine): client-node, loaded only then,
// because it understands every kubeconfig form (exec plugins, client certificates, contexts).
// Neither: undefined (labels from NODE_LABELS, attachments unknown, the RBD node half refuses).

type AgentKubeApis = KubeApis & { events: EventsApi; writes: CoreWritesApi };

export async function agentKubeApis(env: Readonly<Record<string, string | undefined>> = process.env): Promise<AgentKubeApis | undefined> {
  if (inCluster(env)) return restApis(inClusterRest(env));
  if (env['KUBECONFIG']) {
    const { kubeClients, loadKubeConfig } = await import('../../src/adapters/kube/kube-config.ts');
    const clients = kubeClients(loadKubeConfig(env));
    return { ...clients, writes: clients.core };
  }
  return undefined;
}

/** Plain GETs on the same access as agentKubeApis: the service account's REST client in a pod, the kubeconfig's server and token with KUBECONFIG. */
async function agentKubeRead(env: Readonly<Record<string, string | undefined>> = process.env): Promise<KubeRead> {
  if (inCluster(env)) {
    const rest = inClusterRest(env);
    return (path, query) => rest.get(path, query);
  }
  const { loadKubeConfig } = await import('../../src/adapters/kube/kube-config.ts');
  const kc = loadKubeConfig(env);
  const cluster = kc.getCurrentCluster();
  const rest = new KubeRest({
    server: cluster?.server ?? '',
    token: () => kc.getCurrentUser()?.token,
    ...(cluster?.caData ? { ca: Buffer.from(cluster.caData, 'base64') } : {}),
  });
  return (path, query) => rest.get(path, query);
}

/** The node's labels as the API server has them: whether a node opted in is read per job, so a label change needs no restart. */
export class KubeNodeLabels implements NodeLabels {
  readonly #lookups: Pick<ClusterLookups, 'node'>;

  constructor(lookups: Pick<ClusterLookups, 'node'>) {
    this.#lookups = lookups;
  }

  async labelsOf(node: string): Promise<Readonly<Record<string, string>> | null> {
    return (await this.#lookups.node(node))?.labels ?? null;
  }
}

/**
 * The LUNs Kubernetes still wants on a node: the WWNs of its attached VolumeAttachments, from the
 * attachment's metadata or its PV. If any attached volume's WWN cannot be told, the answer is
 * 'unknown' rather than a partial set: a partial set would read as "not claimed" for exactly the
 * LUN we could not resolve.
 */
export class KubeAttachedVolumes implements AttachedVolumes {
  readonly #lookups: Pick<ClusterLookups, 'volumeAttachmentsOnNode' | 'persistentVolume'>;

  constructor(lookups: Pick<ClusterLookups, 'volumeAttachmentsOnNode' | 'persistentVolume'>) {
    this.#lookups = lookups;
  }

  async wwidsAttachedTo(node: string): Promise<Set<string> | 'unknown'> {
    const wwids = new Set<string>();
    for (const va of await this.#lookups.volumeAttachmentsOnNode(node)) {
      if (!va.attached) continue;
      const wwn = va.wwn ?? (va.pv ? (await this.#lookups.persistentVolume(va.pv))?.wwn : undefined);
      if (!wwn) return 'unknown';
      wwids.add(wwn);
    }
    return wwids;
  }
}

/** The pods Kubernetes has on a node, from the API server. */
class KubeNodePods implements NodePods {
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

/** orphaned-pod-volumes' questions: every pod's UID (any namespace or node), and the PVs attached to the node. */
export class KubeOrphanKube implements OrphanKube {
  readonly #lookups: Pick<ClusterLookups, 'allPods' | 'volumeAttachmentsOnNode'>;

  constructor(lookups: Pick<ClusterLookups, 'allPods' | 'volumeAttachmentsOnNode'>) {
    this.#lookups = lookups;
  }

  async podsByUid(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const p of await this.#lookups.allPods()) if (p.uid) out[p.uid] = `${p.namespace}/${p.name}`;
    return out;
  }

  async attachedPvs(node: string): Promise<string[]> {
    return (await this.#lookups.volumeAttachmentsOnNode(node)).flatMap((va) => (va.pv ? [va.pv] : []));
  }
}
