import { afterAll, beforeAll } from 'vitest';
import { KubeLookups } from '../../../../src/adapters/kube/api/kube-lookups.ts';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { CLUSTER_FIXTURE, lookupsContract } from '../../../support/lookups-contract.ts';

let api: FakeKubeApi;
let lookups: KubeLookups;
let rest: KubeLookups;

beforeAll(async () => {
  api = await startFakeKubeApi();
  for (const o of CLUSTER_FIXTURE.items) api.put(o);
  lookups = new KubeLookups(kubeClients(api.kubeConfig()));
  rest = new KubeLookups(restApis(new KubeRest({ server: api.url, token: () => 'fake-token' })));
});
afterAll(async () => {
  await api?.close();
});

lookupsContract('API server through @kubernetes/client-node', () => lookups);
// The node agent's small REST client (src/adapters/kube/rest/) answers the same questions the same way.
lookupsContract('API server through src/adapters/kube/rest (the node agent)', () => rest);
