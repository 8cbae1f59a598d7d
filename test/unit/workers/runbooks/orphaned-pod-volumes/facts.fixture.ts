import type { OrphanFacts, UidFacts, VolData } from '../../../../../workers/runbooks/orphaned-pod-volumes/facts.ts';
import type { TreeEntry } from '../../../../../workers/runbooks/orphaned-pod-volumes/pod-tree.ts';

// Facts of one node with kubelet's tree of a gone pod, as observe() would report them.

export const NODE = 'worker-1';
export const UID = '0b8c1e1a-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
export const UID2 = '1f0c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const ROOT = '/var/lib/kubelet';
export const PODS = `${ROOT}/pods`;
export const DEV = '2049';
export const OBSERVED = '2026-12-07T10:00:00.000Z';

const e = (type: TreeEntry['type'], rel: string, size = 4096): TreeEntry => ({ type, dev: DEV, size, rel });

/** kubelet's layout of a pod with one CSI volume and one emptyDir, all empty but kubelet's own files. */
export const tree = (): TreeEntry[] => [
  e('dir', ''),
  e('dir', 'volumes'),
  e('dir', 'volumes/kubernetes.io~csi'),
  e('dir', 'volumes/kubernetes.io~csi/pvc-1'),
  e('dir', 'volumes/kubernetes.io~csi/pvc-1/mount'),
  e('file', 'volumes/kubernetes.io~csi/pvc-1/vol_data.json', 231),
  e('dir', 'volumes/kubernetes.io~empty-dir'),
  e('dir', 'volumes/kubernetes.io~empty-dir/cache'),
  e('dir', 'plugins'),
  e('dir', 'containers'),
  e('dir', 'containers/app'),
  e('file', 'containers/app/0a1b2c3d', 0),
  e('file', 'etc-hosts', 210),
];

export const volData = (over: Partial<VolData> = {}): VolData => ({
  volume: 'pvc-1',
  rel: 'volumes/kubernetes.io~csi/pvc-1/vol_data.json',
  size: 231,
  parsed: { specVolID: 'pvc-1', volumeHandle: 'vol-handle-1', driverName: 'rbd.csi.ceph.com', nodeName: NODE },
  stagedAt: [],
  ...over,
});

export const uidFacts = (over: Partial<UidFacts> = {}): UidFacts => ({
  uid: UID,
  dir: `${PODS}/${over.uid ?? UID}`,
  tree: { known: true, value: tree() },
  apiPod: { known: true, value: null },
  inRuntime: { known: true, value: false },
  mounts: [],
  holders: [],
  loops: [],
  volData: [volData()],
  sighting: { since: '2026-12-07T09:40:00.000Z', samples: 3 },
  ...over,
});

export const facts = (over: Partial<OrphanFacts> = {}): OrphanFacts => ({
  node: NODE,
  ranOn: NODE,
  observedAt: OBSERVED,
  kubeletRoot: ROOT,
  podsDir: PODS,
  podsDev: { known: true, value: DEV },
  kubeletActive: { known: true, value: true },
  attachedPvs: { known: true, value: [] },
  unreadableMountinfo: [],
  candidates: [uidFacts()],
  minAgeMs: 600_000,
  ...over,
});
