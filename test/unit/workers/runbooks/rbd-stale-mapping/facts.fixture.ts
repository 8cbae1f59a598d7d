import type { RbdStaleMappingJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { StaleMappingFacts, WatcherFact } from '../../../../../workers/runbooks/rbd-stale-mapping/facts.ts';

export const job: RbdStaleMappingJob = {
  version: 1,
  runbook: 'rbd-stale-mapping',
  key: 'rbd_kube_csi-vol-0001_0123456789ab',
  target: { pool: 'kube', image: 'csi-vol-0001', pod: { namespace: 'shop', name: 'db-new' }, node: 'worker-1' },
  evidence: [{ source: 'k8s-event', summary: 'FailedMount', raw: {} }],
};

export const watcher = (over: Partial<WatcherFact> = {}): WatcherFact => ({
  address: '10.0.0.2:0/3710147553',
  ip: '10.0.0.2',
  client: 'client.4116',
  cookie: '18446462598732840961',
  seenBy: ['listwatchers', 'status'],
  node: { name: 'worker-2', ready: 'True', addressType: 'InternalIP' },
  role: 'ready-node',
  podsOnNode: [],
  ...over,
});

export const facts = (over: Partial<StaleMappingFacts> = {}): StaleMappingFacts => ({
  pool: 'kube',
  image: 'csi-vol-0001',
  jobKey: job.key,
  observedAt: '2026-12-02T15:00:00.000Z',
  imageInfo: { id: '1012658802dd', format: 2, headerObject: 'rbd_header.1012658802dd' },
  watchers: [watcher()],
  unparsedWatchers: [],
  requester: { pod: { namespace: 'shop', name: 'db-new' }, node: 'worker-1' },
  volume: { pv: 'pvc-0001', claim: { namespace: 'shop', name: 'db-data' }, accessModes: ['ReadWriteOnce'] },
  advice: null,
  blocklisted: [],
  fencing: 'on',
  blocklistExpirySeconds: 3600,
  fenceNotReadySeconds: 300,
  ...over,
});
