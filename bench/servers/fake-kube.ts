import { startFakeKubeApi } from '../../test/testkit/fake-kube-api.ts';

// The fake API server in a process of its own (bench/kube-cost.ts), so what it spends answering is
// not counted against the worker: the Node the jobs concern and a kured DaemonSet without a lock.

const api = await startFakeKubeApi();
api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: process.env['KUBE_NODE'] ?? 'bench-node' }, spec: {} });
api.put({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kured', namespace: 'kube-system' } });
console.log(`URL ${api.url}`);
