import { afterAll, beforeAll } from 'vitest';
import { KubeLookups } from '../../src/kube/api/kube-lookups.ts';
import { kubeClients } from '../../src/kube/client.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../support/fake-kube-api.ts';
import { CLUSTER_FIXTURE, lookupsContract } from '../unit/kube/lookups-contract.ts';

let api: FakeKubeApi;
let lookups: KubeLookups;

beforeAll(async () => {
  api = await startFakeKubeApi();
  for (const o of CLUSTER_FIXTURE.items) api.put(o);
  lookups = new KubeLookups(kubeClients(api.kubeConfig()));
});
afterAll(async () => {
  await api?.close();
});

lookupsContract('API server through @kubernetes/client-node', () => lookups);
