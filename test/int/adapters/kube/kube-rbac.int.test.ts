import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeLookups } from '../../../../src/adapters/kube/api/kube-lookups.ts';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import type { ClusterLookups } from '../../../../src/adapters/kube/lookups.ts';
import { LOOKUP_CALLS } from '../../../../src/adapters/kube/rbac.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { apiCallOf } from '../../../support/kube-objects.ts';
import { CLUSTER_FIXTURE } from '../../../support/lookups-contract.ts';

// src/adapters/kube/rbac.ts says which API calls each lookup makes; each component's role is the union over
// the lookups it holds (typed as LookupsOf<component>). Here every lookup runs against the fake API
// server, through both clients, on arguments that take its longest path, and the calls it really
// made must be exactly the ones listed: one more and a role would lack it, one fewer and a role
// would grant more than the code uses.

const CEPH_PV = 'pvc-8d2c6b1e-4f3a-4b5c-9d8e-7f6a5b4c3d2e';

/** One call per lookup; a lookup added to ClusterLookups without one here is a compile error. */
const CALLS: { readonly [K in keyof ClusterLookups]-?: (l: ClusterLookups) => Promise<unknown> } = {
  node: (l) => l.node('worker-1'),
  nodesByAddress: (l) => l.nodesByAddress('10.0.0.12'),
  persistentVolume: (l) => l.persistentVolume('local-pv-3f8a1c2e'),
  persistentVolumeByLocalPath: (l) => l.persistentVolumeByLocalPath('/dev/disk/by-id/wwn-0x5000c500a1b2c3d4'),
  claimOfVolume: (l) => l.claimOfVolume(CEPH_PV),
  podsUsingVolume: (l) => l.podsUsingVolume(CEPH_PV),
  podsOnNodeUsingClaim: (l) => l.podsOnNodeUsingClaim('worker-2', { namespace: 'shop', name: 'data-web' }),
  volumeAttachmentsOnNode: (l) => l.volumeAttachmentsOnNode('worker-1'),
  deploymentOfPod: (l) => l.deploymentOfPod({ namespace: 'shop', name: 'web-5f8e7d6c4-m9wzt' }),
  volumesOfPod: (l) => l.volumesOfPod({ namespace: 'kafka', name: 'kafka-0' }),
  persistentVolumes: (l) => l.persistentVolumes(),
  podsOnNode: (l) => l.podsOnNode('worker-1'),
  allPods: (l) => l.allPods(),
  pod: (l) => l.pod({ namespace: 'kafka', name: 'kafka-0' }),
};

let api: FakeKubeApi;
const CLIENTS: Array<[string, () => ClusterLookups]> = [
  ['@kubernetes/client-node', () => new KubeLookups(kubeClients(api.kubeConfig()))],
  ['src/adapters/kube/rest (the node agent)', () => new KubeLookups(restApis(new KubeRest({ server: api.url, token: () => 'fake-token' })))],
];

beforeAll(async () => {
  api = await startFakeKubeApi();
  for (const o of CLUSTER_FIXTURE.items) api.put(o);
});
afterAll(async () => {
  await api?.close();
});

describe.each(CLIENTS)('the API calls of each lookup, through %s', (_name, lookups) => {
  it.each(Object.keys(CALLS) as (keyof ClusterLookups)[])('%s makes exactly the calls src/adapters/kube/rbac.ts lists for it', async (method) => {
    const l = lookups();
    const before = api.requests.length;
    const answer = await CALLS[method](l);
    // An empty answer would mean a short path (a 404 stops early): the fixture must reach the end.
    expect(Array.isArray(answer) ? answer.length : answer).toBeTruthy();
    const made = new Set(api.requests.slice(before).map((r) => apiCallOf(r)?.call));
    expect([...made].sort()).toEqual([...new Set(LOOKUP_CALLS[method])].sort());
  });
});
