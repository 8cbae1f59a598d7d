import { KubeRest, KubeRestError } from '../../src/adapters/kube/rest/transport.ts';
import { type KubeWrites, PreconditionFailedError } from '../../workers/kube-writes/kube-writes.ts';

// A KubeWrites for tests that sends what the port promises over HTTP to an API server (the fake
// one): the Node patch as application/json-patch+json, a failed precondition (409, or 422 for a
// failed `test` op) as PreconditionFailedError, the step's Event as an events.k8s.io Event in
// `default` (a Node's Events live there). The real port is built beside workers/kube-writes/.

export function httpKubeWrites(server: string): KubeWrites {
  const rest = new KubeRest({ server, token: () => 'fake-token' });
  const precondition = (err: unknown): never => {
    if (err instanceof KubeRestError && (err.code === 409 || err.code === 422)) throw new PreconditionFailedError(err.message, err.code);
    throw err;
  };
  return {
    async deletePod(r) {
      try {
        await rest.request('DELETE', `/api/v1/namespaces/${r.namespace}/pods/${r.name}`, {
          body: { preconditions: { uid: r.uid, resourceVersion: r.resourceVersion } },
        });
        return true;
      } catch (err) {
        if (err instanceof KubeRestError && err.code === 404) return false;
        return precondition(err);
      }
    },
    async patchNodeTaints(r) {
      await rest.request('PATCH', `/api/v1/nodes/${r.node}`, { body: r.ops, contentType: 'application/json-patch+json' }).catch(precondition);
    },
    async event(e) {
      await rest.request('POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { generateName: `${e.involved.name}.` },
          regarding: { kind: e.involved.kind, name: e.involved.name },
          reason: e.reason,
          note: e.message,
          type: e.type,
          action: e.reason,
          reportingController: 'volume-medic.io/cluster-worker',
          reportingInstance: 'test',
          eventTime: new Date().toISOString(),
        },
      });
    },
  };
}
