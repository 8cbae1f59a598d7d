import { describe, expect, it } from 'vitest';
import { RbdUnmapJob } from '../../../../../src/core/catalogue/jobs.ts';
import { queueFor } from '../../../../../src/core/catalogue/queues.ts';
import { judgeEvidence } from '../../../../../workers/engine/judge-evidence.ts';
import { plan, unmapJobKey } from '../../../../../workers/runbooks/rbd-stale-mapping/plan.ts';
import type { StaleMappingStep } from '../../../../../workers/runbooks/rbd-stale-mapping/step.ts';
import { facts, job, watcher } from './facts.fixture.ts';

// facts() are observed at 15:00:00; worker-3 has been Unknown since 14:40 (20 min, past the 300 s grace).
const gone = watcher({
  address: '10.0.0.3:0/42',
  ip: '10.0.0.3',
  node: { name: 'worker-3', ready: 'Unknown', readySince: '2026-12-02T14:40:00.000Z', addressType: 'InternalIP' },
  role: 'not-ready-node',
});
const unknown = watcher({ address: '10.0.0.9:0/7', ip: '10.0.0.9', node: null, role: 'unknown-address' });
const listed = watcher({
  address: '198.51.100.7:0/99',
  ip: '198.51.100.7',
  node: null,
  role: 'listed-network',
  network: '198.51.100.0/24',
});
const OBSERVED = new Date('2026-12-02T15:00:00.000Z');

const fences = (p: ReturnType<typeof plan>): Array<Extract<StaleMappingStep, { kind: 'blocklist-add' }>> =>
  p.kind === 'steps' ? p.steps.filter((s): s is Extract<StaleMappingStep, { kind: 'blocklist-add' }> => s.kind === 'blocklist-add') : [];
const claims = (s: StaleMappingStep): string[] => (s.evidence ?? []).map((e) => e.claim);

describe('rbd-stale-mapping plan', () => {
  it("hands the unmap to a Ready watcher node, as a valid node job on that node's queue with the parent's lineage", () => {
    const p = plan(facts(), job);
    expect(p.kind).toBe('steps');
    if (p.kind !== 'steps') return;
    expect(p.steps).toHaveLength(1);
    const step = p.steps[0]!;
    expect(step.kind).toBe('enqueue-unmap');
    if (step.kind !== 'enqueue-unmap') return;
    const node = RbdUnmapJob.parse(step.job);
    expect(node.target).toEqual({ node: 'worker-2', pool: 'kube', image: 'csi-vol-0001', watcher: '10.0.0.2:0/3710147553' });
    expect(node.parent).toBe(job.key);
    expect(node.key).toBe(unmapJobKey(job.key, '10.0.0.2:0/3710147553'));
    expect(node.key).not.toContain(':');
    expect(queueFor(node)).toBe('vm-node-{worker-2}');
  });

  it('gives the same node job key for the same parent and watcher, and different keys for different watchers', () => {
    expect(unmapJobKey(job.key, '10.0.0.2:0/1')).toBe(unmapJobKey(job.key, '10.0.0.2:0/1'));
    expect(unmapJobKey(job.key, '10.0.0.2:0/1')).not.toBe(unmapJobKey(job.key, '10.0.0.2:0/2'));
  });

  it("ignores the requesting pod's own node, and is done when no other watcher is left", () => {
    const p = plan(facts({ watchers: [watcher({ node: { name: 'worker-1', ready: 'True', addressType: 'InternalIP' }, role: 'requester' })] }), job);
    expect(p).toMatchObject({ kind: 'nothing-to-do' });
    expect(plan(facts({ watchers: [] }), job)).toMatchObject({ kind: 'nothing-to-do', summary: expect.stringContaining('freed itself') });
  });

  it("refuses a real multi-attach: a running pod on the watcher's node still uses the PVC", () => {
    const p = plan(facts({ watchers: [watcher({ podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-2', phase: 'Running' }] })] }), job);
    expect(p.kind).toBe('refuse');
    if (p.kind === 'refuse') expect(p.reasons[0]).toMatch(/^real multi-attach: pod shop\/db-old \(Running\) on node worker-2/);
  });

  it("does not count a finished pod on the watcher's node as a user", () => {
    const p = plan(facts({ watchers: [watcher({ podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-2', phase: 'Succeeded' }] })] }), job);
    expect(p.kind).toBe('steps');
  });

  it('refuses to hand over when the PV has no known PVC, since a user on that node cannot be ruled out', () => {
    const p = plan(facts({ volume: { pv: 'pvc-0001', accessModes: [] } }), job);
    expect(p).toMatchObject({ kind: 'refuse', reasons: [expect.stringContaining('no PVC is known')] });
  });

  it('refuses, naming pool and image, an image that belongs to no PV of the cluster, whatever its watchers', () => {
    // Fenceable watchers (a node NotReady past the grace, a listed network) and a Ready node: none
    // of them is touched for an image that is not a PersistentVolume's.
    for (const watchers of [[gone, listed], [watcher()], [watcher(), gone]]) {
      expect(plan(facts({ watchers, volume: null }), job)).toEqual({
        kind: 'refuse',
        reasons: [
          "rbd image kube/csi-vol-0001 belongs to no PersistentVolume of this cluster (no PV's CSI volumeAttributes pool + imageName, nor an rbd volume source, names it): not releasing it",
        ],
      });
    }
  });

  it('fences the client of a node NotReady past the grace and of a listed network, recording the undo', () => {
    const p = plan(facts({ watchers: [gone, listed] }), job);
    expect(p.kind).toBe('steps');
    if (p.kind !== 'steps') return;
    expect(p.steps.map((s) => s.id)).toEqual(['blocklist-add:10.0.0.3:0/42', 'blocklist-add:198.51.100.7:0/99']);
    expect(p.steps[0]).toMatchObject({
      kind: 'blocklist-add',
      destructive: true,
      expirySeconds: 3600,
      headerObject: 'rbd_header.1012658802dd',
      node: 'worker-3',
      undo: ['ceph', 'osd', 'blocklist', 'rm', '10.0.0.3:0/42'],
    });
    expect(p.steps[1]).toMatchObject({ node: null, network: '198.51.100.0/24' });
    expect(p.summary).toContain('undo: `ceph osd blocklist rm 10.0.0.3:0/42`');
    expect(p.summary).toContain('fence 198.51.100.7:0/99 (network 198.51.100.0/24)');
  });

  it('gives a fence of a NotReady node its evidence: the watch, whose address it is, NotReady since when, no pod there, not blocklisted', () => {
    const [step] = fences(plan(facts({ watchers: [gone] }), job));
    expect(step!.evidence).toEqual([
      {
        claim: '10.0.0.3:0/42 (client.4116) still watches kube/csi-vol-0001',
        source: 'rados -p kube listwatchers rbd_header.1012658802dd and rbd status kube/csi-vol-0001',
        observedAt: OBSERVED.toISOString(),
        status: 'holds',
        detail: 'cookie 18446462598732840961',
      },
      {
        claim: '10.0.0.3 is an address of node worker-3, and of no other node',
        source: 'Node worker-3 status.addresses[type=InternalIP]',
        observedAt: OBSERVED.toISOString(),
        status: 'holds',
      },
      {
        claim: 'node worker-3 has not been Ready for 300 s',
        source: 'Node worker-3 status.conditions[type=Ready].lastTransitionTime',
        observedAt: OBSERVED.toISOString(),
        status: 'holds',
        detail: 'Ready=Unknown since 2026-12-02T14:40:00.000Z',
        persistence: { since: '2026-12-02T14:40:00.000Z', samples: 1, minSamples: 1, acrossBoot: false, mustHoldMs: 300_000 },
      },
      {
        claim: 'no pod on node worker-3 that uses PVC shop/db-data may still run',
        source: 'Pods using PVC shop/db-data (spec.nodeName, status.phase)',
        observedAt: OBSERVED.toISOString(),
        status: 'holds',
        detail: 'none scheduled there',
      },
      {
        claim: '10.0.0.3:0/42 is not blocklisted yet',
        source: 'ceph osd blocklist ls',
        observedAt: OBSERVED.toISOString(),
        status: 'holds',
      },
    ]);
    // The engine lets it run: 20 min NotReady is past the 300 s grace.
    expect(judgeEvidence(step!, OBSERVED)).toEqual({ kind: 'go' });
  });

  it('refuses the watcher at an address no node has and no listed network contains, naming the address and the image', () => {
    const p = plan(facts({ watchers: [unknown] }), job);
    expect(fences(p)).toEqual([]);
    expect(p).toMatchObject({ kind: 'refuse' });
    if (p.kind !== 'refuse') return;
    expect(p.reasons[0]).toMatch(/^watcher 10\.0\.0\.9:0\/7 of kube\/csi-vol-0001 is at 10\.0\.0\.9, an address no node lists .* not fenced/);
    expect(p.reasons[0]).toContain('fence it by hand (`ceph osd blocklist add 10.0.0.9:0/7 3600`');
    // Not even next to a watcher it could fence: all or nothing.
    expect(plan(facts({ watchers: [gone, unknown] }), job).kind).toBe('refuse');
  });

  it('fences the client in a listed network on evidence that names the network', () => {
    const [step] = fences(plan(facts({ watchers: [listed] }), job));
    expect(step!.evidence).toContainEqual(
      expect.objectContaining({
        claim: '198.51.100.7 is in 198.51.100.0/24, a network the operator allows fencing in, and no node lists it',
        source: 'RBD_FENCE_CIDRS; Nodes status.addresses',
        status: 'holds',
      }),
    );
    expect(claims(step!).some((c) => c.includes('pod'))).toBe(false);
    expect(judgeEvidence(step!, OBSERVED)).toEqual({ kind: 'go' });
  });

  it('makes the fence of a node NotReady for less than the grace wait until the grace has passed', () => {
    const young = watcher({ ...gone, node: { ...gone.node!, ready: 'False', readySince: '2026-12-02T14:58:00.000Z' } });
    const [step] = fences(plan(facts({ watchers: [young] }), job));
    expect(step).toBeDefined();
    const judged = judgeEvidence(step!, OBSERVED);
    expect(judged).toMatchObject({ kind: 'wait', until: new Date('2026-12-02T15:03:00.000Z') });
    expect(judged.kind === 'wait' && judged.why).toContain('node worker-3 has not been Ready for 300 s: held for 120 s');
    // Once the grace has passed the same evidence, observed again, lets it run.
    expect(
      judgeEvidence(
        { ...step!, evidence: step!.evidence!.map((e) => ({ ...e, observedAt: '2026-12-02T15:03:00.000Z' })) },
        new Date('2026-12-02T15:03:00.000Z'),
      ),
    ).toEqual({ kind: 'go' });
  });

  it('fences a node tainted out-of-service at once, on the taint', () => {
    const tainted = watcher({
      ...gone,
      node: {
        ...gone.node!,
        ready: 'Unknown',
        readySince: '2026-12-02T14:59:50.000Z',
        outOfService: { effect: 'NoExecute', value: 'nodeshutdown', timeAdded: '2026-12-02T14:59:55.000Z' },
      },
    });
    const [step] = fences(plan(facts({ watchers: [tainted] }), job));
    expect(step!.evidence).toContainEqual(
      expect.objectContaining({
        claim: 'node worker-3 is declared out of service (taint node.kubernetes.io/out-of-service:NoExecute)',
        source: 'Node worker-3 spec.taints',
        status: 'holds',
      }),
    );
    expect(step!.evidence!.some((e) => e.persistence)).toBe(false);
    expect(judgeEvidence(step!, OBSERVED)).toEqual({ kind: 'go' });
  });

  it('refuses to fence when since when the node is NotReady is not known, or no PVC is known to look for its pods', () => {
    const noSince = watcher({ ...gone, node: { name: 'worker-3', ready: 'Unknown', addressType: 'InternalIP' } });
    const a = plan(facts({ watchers: [noSince] }), job);
    expect(a).toMatchObject({
      kind: 'refuse',
      reasons: [
        expect.stringContaining('not fencing 10.0.0.3:0/42 (watcher of kube/csi-vol-0001): no evidence that node worker-3 has not been Ready for 300 s'),
      ],
    });
    expect(a.kind === 'refuse' && a.reasons[0]).toContain('since when is not recorded');
    const noCondition = watcher({ ...gone, node: { name: 'worker-3', ready: 'absent', addressType: 'InternalIP' } });
    expect(plan(facts({ watchers: [noCondition] }), job)).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('the Node reports no Ready condition')],
    });
    expect(plan(facts({ watchers: [gone], volume: { pv: 'pvc-0001', accessModes: [] } }), job)).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('no evidence that no pod on node worker-3 that uses kube/csi-vol-0001 may still run')],
    });
  });

  it('refuses to fence a node whose kubelet still reports (Ready=False) a running pod using the PVC', () => {
    const reporting = watcher({
      ...gone,
      node: { ...gone.node!, ready: 'False' },
      podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-3', phase: 'Running' }],
    });
    const p = plan(facts({ watchers: [reporting] }), job);
    expect(p).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('pod shop/db-old is Running as reported by the kubelet of the node (Ready=False, still posting status)')],
    });
  });

  it('refuses an address several nodes list, and a Ready node that carries the out-of-service taint', () => {
    const shared = watcher({ ...gone, node: null, role: 'ambiguous-address', nodesWithAddress: ['worker-3', 'worker-3b'] });
    expect(plan(facts({ watchers: [shared] }), job)).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('an address of several nodes (worker-3, worker-3b)')],
    });
    const contradicting = watcher({
      node: { name: 'worker-2', ready: 'True', addressType: 'InternalIP', outOfService: { effect: 'NoExecute' } },
    });
    expect(plan(facts({ watchers: [contradicting] }), job)).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('is Ready yet tainted node.kubernetes.io/out-of-service')],
    });
  });

  it('fences a node that stopped posting status (Unknown) even though the API still shows its pod Running (its last known phase)', () => {
    const stale = { ...gone, podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-3', phase: 'Running' }] };
    const [step] = fences(plan(facts({ watchers: [stale] }), job));
    expect(claims(step!)).toContain(
      'the pods on node worker-3 that use PVC shop/db-data are not known to run: shop/db-old (Running) show the last phase the node reported',
    );
  });

  it('under the approval policy plans the fence as a high-risk step the engine holds for approval, and says how by hand when fencing is off', () => {
    const approval = plan(facts({ watchers: [gone], fencing: 'approval' }), job);
    expect(approval).toMatchObject({
      kind: 'steps',
      steps: [
        {
          kind: 'blocklist-add',
          address: '10.0.0.3:0/42',
          risk: 'high',
          destructive: true,
          undo: ['ceph', 'osd', 'blocklist', 'rm', '10.0.0.3:0/42'],
        },
      ],
    });
    const on = plan(facts({ watchers: [gone], fencing: 'on' }), job);
    expect(on).toMatchObject({ kind: 'steps', steps: [{ kind: 'blocklist-add' }] });
    expect((on as { steps: Array<{ risk?: string }> }).steps[0]!.risk).toBeUndefined();
    const off = plan(facts({ watchers: [gone], fencing: 'off' }), job);
    expect(off).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('fencing is off: to release kube/csi-vol-0001, run `ceph osd blocklist add 10.0.0.3:0/42 3600`')],
    });
  });

  it('refuses everything when one watcher must be refused (no half-done release)', () => {
    const p = plan(facts({ watchers: [watcher(), { ...gone }], fencing: 'off' }), job);
    expect(p.kind).toBe('refuse');
  });

  it('refuses a watcher listing it cannot read, and an image that does not exist', () => {
    expect(plan(facts({ unparsedWatchers: ['watcher=v2:1.2.3.4:0/1 client.1 cookie=1'] }), job).kind).toBe('refuse');
    expect(plan(facts({ imageInfo: null, imageError: 'rbd: error opening image csi-vol-0001: (2) No such file or directory' }), job)).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('does not exist')],
    });
  });

  it('refuses a watcher already blocklisted that still watches rather than fencing again', () => {
    expect(plan(facts({ watchers: [gone], blocklisted: ['10.0.0.3:0/42'] }), job)).toMatchObject({
      kind: 'refuse',
      reasons: [expect.stringContaining('already blocklisted')],
    });
  });

  it('carries the prevention advice into the summary and into refusals', () => {
    const advice = 'Deployment shop/db uses the ReadWriteOnce PVC shop/db-data with strategy RollingUpdate and maxSurge 1';
    const p = plan(facts({ advice }), job);
    expect(p.kind === 'steps' && p.summary).toContain(`Prevention: ${advice}`);
    const r = plan(facts({ advice, volume: null }), job);
    expect(r.kind === 'refuse' && r.reasons.at(-1)).toBe(`prevention: ${advice}`);
  });
});
