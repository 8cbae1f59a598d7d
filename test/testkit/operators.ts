import { OPERATOR_API_GROUP, OPERATOR_PERMISSIONS, type OperatorResource } from '../../src/control/auth/permissions.ts';
import { startFakeKubeApi, type FakeKubeApi } from './fake-kube-api.ts';

// Operators for tests that go through the receiver's operator routes: the wire-protocol fake API
// server answers their TokenReviews and SubjectAccessReviews. Pass `operatorKubeConfig:
// ops.api.kubeConfig()` to startReceiver, and `ops.token(name)` as the bearer: the receiver then
// knows that operator as `name`.

const ADMINS = 'volume-medic-admins';
export const VIEWERS = 'volume-medic-viewers';

export interface Operators {
  api: FakeKubeApi;
  /** The token of user `name` (created on first use) in `group`: ADMINS (every verb, default) or VIEWERS (list/get). */
  token(name: string, group?: string): string;
  close(): Promise<void>;
}

export async function startOperators(): Promise<Operators> {
  const api = await startFakeKubeApi();
  for (const resource of Object.keys(OPERATOR_PERMISSIONS) as OperatorResource[]) {
    api.grant({ group: ADMINS, apiGroup: OPERATOR_API_GROUP, resource, verbs: ['*'] });
  }
  api.grant({ group: VIEWERS, apiGroup: OPERATOR_API_GROUP, resource: 'jobs', verbs: ['get', 'list'] });
  api.grant({ group: VIEWERS, apiGroup: OPERATOR_API_GROUP, resource: 'controls', verbs: ['get'] });
  const tokens = new Map<string, string>();
  return {
    api,
    token(name, group = ADMINS) {
      const key = `${name}\0${group}`;
      let t = tokens.get(key);
      if (!t) {
        t = `kube-token-${tokens.size}-${Buffer.from(key).toString('hex')}`;
        tokens.set(key, t);
        api.addUser(t, { username: name, uid: `uid-${tokens.size}`, groups: [group] });
      }
      return t;
    },
    close: () => api.close(),
  };
}
