import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKubeWrites } from '../../../../src/adapters/kube/api-kube-writes.ts';
import type { CoreWritesApi, EventsApi } from '../../../../src/adapters/kube/api/apis.ts';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { ParkedError } from '../../../../workers/engine/gate.ts';
import type { PlanViewStep } from '../../../../workers/engine/planned-commands.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import { type ObjectRef, PreconditionFailedError } from '../../../../workers/kube-writes/kube-writes.ts';
import { DIRECT_CALLS } from '../../../../src/adapters/kube/rbac.ts';
import { apiCallOf, uncoveredByRbac } from '../../../support/kube-objects.ts';
import {
  APPROVAL_GATE,
  context,
  deletePodArgv,
  deletePodStep,
  JOB,
  NODE,
  POD,
  removeTaintStep,
  TAINT,
  writeRunbook,
} from '../../../support/kube-write-runbook.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';

// The write port's API server implementation (ApiKubeWrites) over HTTP against the fake API server,
// which answers the writes as kube-apiserver does (test/testkit/fake-kube-writes.ts): the
// preconditions travel with every DELETE and PATCH and the server enforces them; a parked or
// dry-run job sends nothing at all. Both clients: the node agent's REST client and
// @kubernetes/client-node (the cluster worker's).

type Clients = { core: CoreWritesApi; events: EventsApi };
const CLIENTS: Array<[string, (api: FakeKubeApi) => Clients]> = [
  ['src/adapters/kube/rest (node agent)', (api) => restClients(api)],
  ['@kubernetes/client-node (cluster worker)', (api) => kubeClients(api.kubeConfig())],
];
function restClients(api: FakeKubeApi): Clients {
  const r = restApis(new KubeRest({ server: api.url, token: () => 'fake-token' }));
  return { core: r.writes, events: r.events };
}

const OTHER_TAINT = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', timeAdded: '2026-12-07T07:00:00Z' };

describe.each(CLIENTS)('the Kubernetes write port through %s', (_name, clients) => {
  let api: FakeKubeApi;
  const writes = (component: 'node-agent' | 'cluster-worker') => new ApiKubeWrites({ component, ...clients(api), instance: NODE });

  beforeEach(async () => {
    api = await startFakeKubeApi();
    api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: POD.name, namespace: POD.namespace, uid: POD.uid }, spec: { nodeName: NODE } });
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { taints: [TAINT, OTHER_TAINT] } });
  });
  const made = new Set<string | undefined>();
  afterEach(async () => {
    for (const r of api.writeRequests()) made.add(apiCallOf(r)?.call);
    await api.close();
  });
  // The other way: the port uses both wide writes the roles grant, so neither is a grant nobody uses.
  // (The receiver's VolumeMedicRemediation status patch is not the port's: node-healthcheck.int.test.ts.)
  // (The receiver's own VolumeRemediation records: test/int/control/records/record-sync.int.test.ts.)
  afterAll(() => {
    const granted = Object.values(DIRECT_CALLS)
      .flat()
      .map((d) => d.call)
      .filter((c) => / (delete|patch)$/.test(c) && !c.includes('/events ') && !c.startsWith('volume-medic.io/'));
    expect([...made].filter((c) => !c?.includes('/events ')).sort()).toEqual(granted.sort());
  });
  const pod = () => api.get('v1', 'Pod', POD.name, POD.namespace);
  const node = () => api.get('v1', 'Node', NODE);

  it('deletes a pod with DeleteOptions.preconditions {uid, resourceVersion}: a graceful delete, the pod kept terminating', async () => {
    const rv = pod()!['metadata'].resourceVersion as string;
    expect(await writes('node-agent').deletePod({ ...POD, resourceVersion: rv, reason: 'read-only volume' })).toBe(true);
    expect(api.writeRequests()).toEqual([
      {
        method: 'DELETE',
        path: `/api/v1/namespaces/${POD.namespace}/pods/${POD.name}`,
        query: {},
        contentType: 'application/json',
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: POD.uid, resourceVersion: rv } },
      },
    ]);
    expect(pod()!['metadata']).toMatchObject({ deletionGracePeriodSeconds: 30, deletionTimestamp: expect.any(String) });
    expect(uncoveredByRbac(api.requests, 'node-agent')).toEqual([]);
  });

  it('gracePeriodSeconds 0 removes the pod at once; a second delete finds it gone (false)', async () => {
    const rv = pod()!['metadata'].resourceVersion as string;
    const k = writes('node-agent');
    expect(await k.deletePod({ ...POD, resourceVersion: rv, gracePeriodSeconds: 0, reason: 'r' })).toBe(true);
    expect(pod()).toBeUndefined();
    expect(await k.deletePod({ ...POD, resourceVersion: rv, gracePeriodSeconds: 0, reason: 'r' })).toBe(false);
  });

  it.each([
    [
      'another uid (the pod was re-created)',
      { uid: 'f00dfeed-0000-4000-8000-000000000002' },
      /the UID in the precondition \(f00dfeed-.*\) does not match the UID in record/,
    ],
    ['another resourceVersion (the pod changed)', { resourceVersion: '1' }, /the ResourceVersion in the precondition \(1\) does not match/],
  ])('a delete whose preconditions name %s is PreconditionFailedError (409), and the pod stays as it was', async (_what, change, message) => {
    const before = pod()!;
    const err = await writes('node-agent')
      .deletePod({ ...POD, resourceVersion: before['metadata'].resourceVersion, ...change, reason: 'r' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect((err as PreconditionFailedError).status).toBe(409);
    expect((err as Error).message).toMatch(message);
    expect(pod()).toEqual(before);
  });

  it('removes the taint with a JSON patch whose test ops pin it and the resourceVersion; the other taint stays', async () => {
    const rv = node()!['metadata'].resourceVersion as string;
    const step = removeTaintStep({ resourceVersion: rv });
    if (step.kind !== 'remove-taint') throw new Error('not the taint step');
    await writes('cluster-worker').patchNodeTaints({ node: NODE, ops: step.ops, reason: 'r' });
    expect(node()!['spec'].taints).toEqual([OTHER_TAINT]);
    expect(api.writeRequests()).toEqual([
      { method: 'PATCH', path: `/api/v1/nodes/${NODE}`, query: {}, contentType: 'application/json-patch+json', body: step.ops },
    ]);
    expect(uncoveredByRbac(api.requests, 'cluster-worker')).toEqual([]);
  });

  it.each([
    ['the Node changed since it was read (resourceVersion)', () => removeTaintStep({ resourceVersion: '1' })],
    ['another taint at that index (one was added before it)', () => removeTaintStep({ resourceVersion: node()!['metadata'].resourceVersion, index: 1 })],
  ])('a patch whose test op fails because %s is PreconditionFailedError (422), and the Node is unchanged', async (_what, make) => {
    const before = node()!;
    const step = make();
    if (step.kind !== 'remove-taint') throw new Error('not the taint step');
    const err = await writes('cluster-worker')
      .patchNodeTaints({ node: NODE, ops: step.ops, reason: 'r' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect((err as PreconditionFailedError).status).toBe(422);
    expect(node()).toEqual(before);
  });

  it("a step's Event goes on the pod, in its namespace, as volume-medic's; a repeat bumps its series and keeps the first note (the API server's rule)", async () => {
    const k = writes('node-agent');
    const involved: ObjectRef = { kind: 'Pod', namespace: POD.namespace, name: POD.name, uid: POD.uid };
    const e = {
      involved,
      reason: 'ReadOnlyVolumeRecovery',
      message: 'm',
      type: 'Warning' as const,
    };
    await k.event(e);
    await k.event({ ...e, message: 'again' });
    const [written] = api.list('events.k8s.io/v1', 'Event');
    expect(written).toMatchObject({
      metadata: { namespace: POD.namespace },
      reportingController: 'volume-medic',
      reportingInstance: NODE,
      reason: 'ReadOnlyVolumeRecovery',
      type: 'Warning',
      note: 'm',
      series: { count: 2 },
      regarding: { kind: 'Pod', namespace: POD.namespace, name: POD.name, uid: POD.uid },
    });
    expect(uncoveredByRbac(api.requests, 'node-agent')).toEqual([]);
  });

  it("each component gets only its role's writes: refused before a request goes out", async () => {
    await expect(writes('node-agent').patchNodeTaints({ node: NODE, ops: [], reason: 'r' })).rejects.toThrow(/may not patch-node-taints/);
    await expect(writes('cluster-worker').deletePod({ ...POD, reason: 'r' })).rejects.toThrow(/may not delete-pod/);
    expect(api.writeRequests()).toEqual([]);
  });

  describe('under the engine', () => {
    const run = (mode: 'enforce' | 'dry-run', gate?: typeof APPROVAL_GATE) => {
      const plan = {
        kind: 'steps' as const,
        summary: 'delete the pod',
        steps: [deletePodStep({ pod: { ...POD, resourceVersion: pod()!['metadata'].resourceVersion } })],
      };
      return runRunbook(writeRunbook(plan), JOB, context(mode, gate), { host: new FakeHost(), kube: writes('node-agent'), stateDir: '/state' });
    };

    it('a job parked for approval sends no DELETE or PATCH (not even an Event), and its plan shows the DELETE it would send', async () => {
      const err = await run('enforce', APPROVAL_GATE).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ParkedError);
      expect(api.writeRequests()).toEqual([]);
      expect(((err as ParkedError).plan.steps[0] as PlanViewStep).plannedArgv?.[0]).toEqual(
        deletePodArgv({ ...POD, resourceVersion: pod()!['metadata'].resourceVersion }),
      );
      expect(pod()!['metadata'].deletionTimestamp).toBeUndefined();
    });

    it('a dry-run sends nothing', async () => {
      const result = await run('dry-run');
      expect(result.outcome).toBe('planned');
      expect(api.writeRequests()).toEqual([]);
    });

    it('enforce sends exactly the DELETE with its preconditions, then the Event', async () => {
      const rv = pod()!['metadata'].resourceVersion as string;
      const result = await run('enforce');
      expect(result.outcome).toBe('succeeded');
      expect(api.writeRequests().map((r) => `${r.method} ${r.path}`)).toEqual([
        `DELETE /api/v1/namespaces/${POD.namespace}/pods/${POD.name}`,
        `POST /apis/events.k8s.io/v1/namespaces/${POD.namespace}/events`,
      ]);
      expect(api.writeRequests()[0]?.body).toMatchObject({ preconditions: { uid: POD.uid, resourceVersion: rv } });
    });
  });
});
