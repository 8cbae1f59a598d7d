import type {
  EventsV1Event,
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
import type { AppsApi, CoreApi, CoreWritesApi, EventsApi, StorageApi } from '../api/apis.ts';
import type { KubeApis } from '../api/kube-lookups.ts';
import type { KubeRest } from './transport.ts';

// The calls of src/adapters/kube/api/apis.ts as REST paths. The API server's JSON is what the converters
// in src/adapters/kube/api/ read (client-node's models use the same field names for everything they read;
// the one Date, Event.eventTime, is written as a MicroTime string either way).

const seg = (s: string): string => encodeURIComponent(s);

export function restApis(rest: KubeRest): KubeApis & { events: EventsApi; writes: CoreWritesApi } {
  const core: CoreApi = {
    readNode: ({ name }) => rest.get<V1Node>(`/api/v1/nodes/${seg(name)}`),
    listNode: () => rest.get<V1NodeList>('/api/v1/nodes'),
    readNamespacedPod: ({ namespace, name }) => rest.get<V1Pod>(`/api/v1/namespaces/${seg(namespace)}/pods/${seg(name)}`),
    listNamespacedPod: ({ namespace, fieldSelector }) => rest.get<V1PodList>(`/api/v1/namespaces/${seg(namespace)}/pods`, { fieldSelector }),
    listPodForAllNamespaces: ({ fieldSelector }) => rest.get<V1PodList>('/api/v1/pods', { fieldSelector }),
    readNamespacedPersistentVolumeClaim: ({ namespace, name }) =>
      rest.get<V1PersistentVolumeClaim>(`/api/v1/namespaces/${seg(namespace)}/persistentvolumeclaims/${seg(name)}`),
    readPersistentVolume: ({ name }) => rest.get<V1PersistentVolume>(`/api/v1/persistentvolumes/${seg(name)}`),
    listPersistentVolume: () => rest.get<V1PersistentVolumeList>('/api/v1/persistentvolumes'),
  };
  const storage: StorageApi = {
    listVolumeAttachment: () => rest.get<V1VolumeAttachmentList>('/apis/storage.k8s.io/v1/volumeattachments'),
  };
  const apps: AppsApi = {
    readNamespacedReplicaSet: ({ namespace, name }) => rest.get<V1ReplicaSet>(`/apis/apps/v1/namespaces/${seg(namespace)}/replicasets/${seg(name)}`),
    readNamespacedDeployment: ({ namespace, name }) => rest.get<V1Deployment>(`/apis/apps/v1/namespaces/${seg(namespace)}/deployments/${seg(name)}`),
  };
  const eventsPath = (namespace: string) => `/apis/events.k8s.io/v1/namespaces/${seg(namespace)}/events`;
  const events: EventsApi = {
    createNamespacedEvent: ({ namespace, body }) => rest.request('POST', eventsPath(namespace), { body }),
    readNamespacedEvent: ({ namespace, name }) => rest.get<EventsV1Event>(`${eventsPath(namespace)}/${seg(name)}`),
    patchNamespacedEvent: ({ namespace, name, body }) =>
      rest.request('PATCH', `${eventsPath(namespace)}/${seg(name)}`, { body, contentType: 'application/json-patch+json' }),
  };
  const writes: CoreWritesApi = {
    deleteNamespacedPod: ({ namespace, name, body }) => rest.request('DELETE', `/api/v1/namespaces/${seg(namespace)}/pods/${seg(name)}`, { body }),
    patchNode: ({ name, body }) => rest.request('PATCH', `/api/v1/nodes/${seg(name)}`, { body, contentType: 'application/json-patch+json' }),
  };
  return { core, storage, apps, events, writes };
}
