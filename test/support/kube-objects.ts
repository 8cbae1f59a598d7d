import { parseKubePath, type RecordedRequest } from '../testkit/fake-kube-api.ts';
import { allows, verbOf, type ApiCall, type Component } from '../../src/adapters/kube/rbac.ts';

// Builders for the Kubernetes objects the watch tests change, in the shapes the API server
// serves (see test/fixtures/kube/cluster.json for complete captured-shape objects), and the check
// that every request the adapter made is covered by src/adapters/kube/rbac.ts.

export function node(name: string, ready: 'True' | 'False' | 'Unknown', bootId: string, opts: { readySince?: Date; created?: Date } = {}) {
  const since = (opts.readySince ?? new Date()).toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name },
      creationTimestamp: (opts.created ?? new Date(Date.now() - 30 * 86_400_000)).toISOString(),
    },
    status: {
      addresses: [{ type: 'Hostname', address: name }],
      conditions: [
        {
          type: 'Ready',
          status: ready,
          lastHeartbeatTime: new Date().toISOString(),
          lastTransitionTime: since,
          reason: ready === 'True' ? 'KubeletReady' : 'NodeStatusUnknown',
          message: ready === 'True' ? 'kubelet is posting ready status' : 'Kubelet stopped posting node status.',
        },
      ],
      nodeInfo: {
        bootID: bootId,
        kernelVersion: '6.1.0-31-amd64',
        kubeletVersion: 'v1.31.4',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  };
}

/**
 * A Pod (Pending, on `node`) using one PVC, and that PVC bound both ways to its PV: an RBD image
 * as ceph-csi provisions it (volumeAttributes pool + imageName), or a Block Local PV.
 */
export function podWithVolume(o: {
  namespace: string;
  pod: string;
  node: string;
  claim: string;
  pv: string;
  rbd?: { pool: string; image: string };
  local?: { path: string };
}) {
  const pv = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: o.pv },
    spec: {
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: '10Gi' },
      volumeMode: o.local ? 'Block' : 'Filesystem',
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: o.namespace, name: o.claim },
      ...(o.rbd
        ? {
            csi: {
              driver: 'rbd.csi.ceph.com',
              volumeHandle: `0001-0009-rook-ceph-0000000000000002-${o.rbd.image.replace(/^csi-vol-/, '')}`,
              volumeAttributes: { clusterID: 'rook-ceph', pool: o.rbd.pool, imageName: o.rbd.image },
            },
          }
        : {}),
      ...(o.local
        ? {
            local: { path: o.local.path },
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [o.node] }] }],
              },
            },
          }
        : {}),
    },
    status: { phase: 'Bound' },
  };
  const pvc = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: o.claim, namespace: o.namespace },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '10Gi' } },
      volumeName: o.pv,
      volumeMode: o.local ? 'Block' : 'Filesystem',
    },
    status: { phase: 'Bound' },
  };
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: o.pod, namespace: o.namespace },
    spec: {
      nodeName: o.node,
      containers: [{ name: 'main', image: 'busybox:1.37' }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: o.claim } }],
    },
    status: {
      phase: 'Pending',
      containerStatuses: [
        {
          name: 'main',
          image: 'busybox:1.37',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ContainerCreating' } },
        },
      ],
    },
  };
  return [pod, pvc, pv];
}

/** A core/v1 Event as the kubelet writes it (`component`: another reporter, as a forger would set it). */
export function coreEvent(o: {
  name: string;
  namespace?: string;
  uid?: string;
  reason: string;
  message: string;
  involved: { kind: string; name: string; namespace?: string };
  host?: string;
  type?: string;
  component?: string;
}) {
  const now = new Date().toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: o.name, namespace: o.namespace ?? o.involved.namespace ?? 'default', ...(o.uid ? { uid: o.uid } : {}) },
    involvedObject: {
      kind: o.involved.kind,
      name: o.involved.name,
      ...(o.involved.namespace ? { namespace: o.involved.namespace } : {}),
      apiVersion: 'v1',
    },
    reason: o.reason,
    message: o.message,
    source: { component: o.component ?? 'kubelet', ...(o.host ? { host: o.host } : {}) },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    type: o.type ?? 'Warning',
    eventTime: null,
    reportingComponent: o.component ?? 'kubelet',
    reportingInstance: o.host ?? '',
  };
}

/**
 * Requests a component made that its list in src/adapters/kube/rbac.ts does not allow (a namespaced grant
 * covers requests in that namespace only), as `verb group/resource [namespace]`.
 */
export function uncoveredByRbac(requests: readonly RecordedRequest[], component: Component): string[] {
  const out = new Set<string>();
  for (const r of requests) {
    const call = apiCallOf(r);
    if (!call) continue;
    if (!allows(component, call.call, call.namespace)) out.add(`${call.call}${call.namespace ? ` in ${call.namespace}` : ''}`);
  }
  return [...out];
}

/** A recorded request as the API call RBAC sees ("group/resource verb") and its namespace. */
export function apiCallOf(r: RecordedRequest): { call: ApiCall; namespace?: string } | undefined {
  const p = parseKubePath(r.path);
  if (!p) return undefined;
  const segs = p.collection.split('/');
  const group = segs[0] === 'api' ? '' : segs[1]!;
  const resource = segs[segs.length - 1]!;
  const verb = verbOf(r.method, r.query['watch'] === 'true', p.name !== undefined);
  // A subresource is its own RBAC resource (`volumeremediations/status`).
  const call = `${group}/${resource}${p.subresource ? `/${p.subresource}` : ''} ${verb ?? r.method.toLowerCase()}` as ApiCall;
  return { call, ...(p.namespace ? { namespace: p.namespace } : {}) };
}
