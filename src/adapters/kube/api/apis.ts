import type {
  EventsV1Event,
  V1DeleteOptions,
  V1Deployment,
  V1Node,
  V1NodeList,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1PersistentVolumeList,
  V1Pod,
  V1PodList,
  V1ReplicaSet,
  V1VolumeAttachmentList,
} from '@kubernetes/client-node';

// The API calls volume-medic makes, as the smallest interfaces that say so. @kubernetes/client-node's
// CoreV1Api/StorageV1Api/AppsV1Api/EventsV1Api satisfy them (receiver, cluster worker, tests), and
// so does src/adapters/kube/rest/ (the node agent: a few hundred lines of HTTPS instead of tens of MiB of
// generated client on every node). Types only: nothing here loads client-node at run time.
// Errors carry the HTTP status as `code` (isNotFound, 409 on create), as client-node's ApiException does.

type Named = { name: string };
type InNamespace = { namespace: string };

export interface CoreApi {
  readNode(p: Named): Promise<V1Node>;
  listNode(p: object): Promise<V1NodeList>;
  readNamespacedPod(p: Named & InNamespace): Promise<V1Pod>;
  listNamespacedPod(p: InNamespace & { fieldSelector?: string }): Promise<V1PodList>;
  listPodForAllNamespaces(p: { fieldSelector?: string }): Promise<V1PodList>;
  readNamespacedPersistentVolumeClaim(p: Named & InNamespace): Promise<V1PersistentVolumeClaim>;
  readPersistentVolume(p: Named): Promise<V1PersistentVolume>;
  listPersistentVolume(p: object): Promise<V1PersistentVolumeList>;
}

export interface StorageApi {
  listVolumeAttachment(p: object): Promise<V1VolumeAttachmentList>;
}

export interface AppsApi {
  readNamespacedReplicaSet(p: Named & InNamespace): Promise<V1ReplicaSet>;
  readNamespacedDeployment(p: Named & InNamespace): Promise<V1Deployment>;
}

export interface EventsApi {
  createNamespacedEvent(p: InNamespace & { body: EventsV1Event }): Promise<unknown>;
  readNamespacedEvent(p: Named & InNamespace): Promise<EventsV1Event>;
  /** A JSON patch (RFC 6902). */
  patchNamespacedEvent(p: Named & InNamespace & { body: object[] }): Promise<unknown>;
}

/**
 * The writes of the Kubernetes write port (src/adapters/kube/api-kube-writes.ts), apart from the
 * reads so a component that only reads is never handed them. CoreV1Api satisfies it.
 */
export interface CoreWritesApi {
  /** DeleteOptions in the body: preconditions {uid, resourceVersion}, gracePeriodSeconds. */
  deleteNamespacedPod(p: Named & InNamespace & { body: V1DeleteOptions }): Promise<unknown>;
  /** A JSON patch (RFC 6902), sent as application/json-patch+json. */
  patchNode(p: Named & { body: object[] }): Promise<unknown>;
}
