import { describe, expect, it } from 'vitest';
import { InMemoryLookups, type NodeInfo } from '../../../../src/adapters/kube/lookups.ts';
import type { NodeRemediationRequestedSignal } from '../../../../src/core/signals/index.ts';
import { triage } from '../../../../src/control/triage/triage.ts';
import { remediationJobKey } from '../../../../src/control/triage/node-healthcheck.ts';

// A VolumeMedicRemediation (NodeHealthCheck's) for a node: one residual-multipath-cleanup job per
// object uid, for a Node the cluster has, whatever its Ready status (NHC asks because it is not).

const BOOT = 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26';
const UID = '6f1c2d3e-4a5b-4c6d-8e7f-901234567890';
const node = (over: Partial<NodeInfo> = {}): NodeInfo => ({ name: 'worker-1', addresses: [], labels: {}, ready: 'Unknown', bootId: BOOT, ...over });
const signal = (over: Partial<NodeRemediationRequestedSignal> = {}): NodeRemediationRequestedSignal => ({
  kind: 'node-remediation-requested',
  version: 1,
  node: 'worker-1',
  remediation: { namespace: 'medik8s', name: 'worker-1', uid: UID },
  identity: ['nhc', UID],
  evidence: { source: 'node-healthcheck', summary: 'VolumeMedicRemediation medik8s/worker-1', raw: {} },
  ...over,
});
const run = (s: NodeRemediationRequestedSignal, n: NodeInfo | undefined) =>
  triage([s], { lookups: n ? new InMemoryLookups().addNode(n) : new InMemoryLookups(), corroborate: true });

describe('a VolumeMedicRemediation in triage', () => {
  it("makes the node's residual-multipath-cleanup job, keyed by the object's uid, bound to the boot the node runs, while the node is not Ready", async () => {
    const r = await run(signal(), node());
    expect(r.ignored).toEqual([]);
    expect(r.jobs).toEqual([
      {
        runbook: 'residual-multipath-cleanup',
        version: 1,
        key: remediationJobKey(UID),
        target: { node: 'worker-1' },
        bootId: BOOT,
        evidence: [{ source: 'node-healthcheck', summary: 'VolumeMedicRemediation medik8s/worker-1', raw: {} }],
      },
    ]);
    expect(remediationJobKey(UID)).toMatch(/^nhc_6f1c2d3e-4a5b-4c6d-8e7f-901234567890_[0-9a-f]{12}$/);
  });

  it('makes one job of two sightings of the same object, and two of two objects for the same node', async () => {
    const other = '0a1b2c3d-0000-4000-8000-000000000001';
    const r = await triage([signal(), signal(), signal({ remediation: { namespace: 'medik8s', name: 'worker-1-x', uid: other } })], {
      lookups: new InMemoryLookups().addNode(node()),
    });
    expect(r.jobs.map((j) => j.key)).toEqual([remediationJobKey(UID), remediationJobKey(other)]);
  });

  it('makes no job for a node the cluster does not have, saying so', async () => {
    const r = await run(signal(), undefined);
    expect(r.jobs).toEqual([]);
    expect(r.ignored).toEqual([{ reason: 'node-status-disagrees', detail: 'the cluster has no Node worker-1', source: 'node-healthcheck' }]);
  });

  it('refuses a node name that is no node name, a uid that is no uid, and the signal from any other source', async () => {
    expect((await run(signal({ node: 'worker-1; rm -rf /' }), node())).ignored[0]!.reason).toBe('invalid-node-name');
    expect((await run(signal({ remediation: { namespace: 'm', name: 'n', uid: '../x' } }), node())).ignored[0]!.reason).toBe('invalid-name');
    const posted = signal({ evidence: { source: 'k8s-event', summary: 'x', raw: {} } });
    expect((await run(posted, node())).ignored[0]!.reason).toBe('event-reporter-not-trusted');
  });

  it('decides nothing when the Node cannot be read: the watch tries again', async () => {
    const lookups = new InMemoryLookups();
    lookups.node = () => Promise.reject(new Error('connect ECONNREFUSED'));
    await expect(triage([signal()], { lookups })).rejects.toThrow('ECONNREFUSED');
  });
});
