import { describe, expect, it } from 'vitest';
import type { OutOfServiceTaintReleaseJob } from '../../../../../src/core/catalogue/jobs.ts';
import { judgeEvidence } from '../../../../../workers/engine/judge-evidence.ts';
import type { NodeState, TaintReleaseFacts } from '../../../../../workers/runbooks/out-of-service-taint-release/facts.ts';
import { plan } from '../../../../../workers/runbooks/out-of-service-taint-release/plan.ts';

// plan() of out-of-service-taint-release, one claim of docs/decisions/0008 §4.3 at a time: each
// refusal is named `<reason>: <what was seen>`; the plan that passes has the blocklist and
// remove-taint steps, high risk, destructive, with an evidence item per claim.

const NOW = '2026-12-07T09:00:00.000Z';
const T0 = '2026-12-07T08:00:00Z';
const OLD = 'boot-old';
const NEW = 'boot-new';
const OOS = { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: T0 };
const OTHER = { key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' };

const job = (taint: Partial<OutOfServiceTaintReleaseJob['taint']> = {}): OutOfServiceTaintReleaseJob => ({
  version: 1,
  runbook: 'out-of-service-taint-release',
  key: 'oos_worker-2_0123456789ab',
  target: { node: 'worker-2' },
  taint: { timeAdded: T0, bootIdAtFirstSight: OLD, firstSeenAt: '2026-12-07T08:00:05Z', ...taint },
  evidence: [{ source: 'k8s-watch', summary: 'tainted and Ready', raw: {} }],
});

function facts(o: Partial<Omit<TaintReleaseFacts, 'node'>> & { node?: Partial<NodeState> } = {}): TaintReleaseFacts {
  const { node, ...rest } = o;
  return {
    node: 'worker-2',
    observedAt: NOW,
    nodeState: {
      ok: true,
      value: {
        resourceVersion: '812345',
        taints: [OTHER, OOS],
        oosIndex: 1,
        bootId: NEW,
        ready: 'True',
        readySince: '2026-12-07T08:30:00Z',
        labels: {},
        addresses: ['10.0.0.2'],
        ...node,
      },
    },
    leaseRenewTime: { ok: true, value: '2026-12-07T08:59:55Z' },
    rebooted: { ok: true, value: [] },
    volumeAttachments: { ok: true, value: [] },
    terminatingPods: { ok: true, value: [] },
    remediators: [
      { kind: 'SelfNodeRemediation', state: 'listed', names: [] },
      { kind: 'FenceAgentsRemediation', state: 'absent-crd', names: [] },
      { kind: 'Metal3Remediation', state: 'absent-crd', names: [] },
    ],
    networkFence: { state: 'none' },
    cleanupJobs: {
      ok: true,
      value: [
        { runbook: 'residual-multipath-cleanup', id: 'residual_a', state: 'completed', bootId: NEW, finishedAt: '2026-12-07T08:35:00Z', outcome: 'succeeded' },
      ],
    },
    ourBlocklist: { ok: true, value: [] },
    readyGraceSeconds: 600,
    ...rest,
  };
}

/** The residual clean-up of `boot` succeeded. */
const cleanOf = (boot: string): TaintReleaseFacts['cleanupJobs'] => ({
  ok: true,
  value: [{ runbook: 'residual-multipath-cleanup', id: 'residual_a', state: 'completed', bootId: boot, outcome: 'succeeded' }],
});

const reasons = (p: ReturnType<typeof plan>): string[] => (p.kind === 'refuse' ? p.reasons : []);

describe('plan of out-of-service-taint-release', () => {
  it('plans one high-risk destructive remove-taint with evidence for every claim when all hold', () => {
    const p = plan(facts(), job());
    expect(p.kind).toBe('steps');
    if (p.kind !== 'steps') return;
    expect(p.steps.map((s) => s.id)).toEqual([`remove-taint:worker-2:${T0}`]);
    const [s] = p.steps;
    expect(s).toMatchObject({ destructive: true, risk: 'high', index: 1, resourceVersion: '812345', taint: OOS, otherTaints: [OTHER] });
    expect(s?.evidence?.map((e) => e.claim)).toEqual([
      expect.stringMatching(/booted since it was declared out of service/),
      expect.stringMatching(/no SelfNodeRemediation, FenceAgentsRemediation or Metal3Remediation/),
      expect.stringMatching(/no VolumeAttachment names/),
      expect.stringMatching(/no pod bound to node worker-2 is Terminating/),
      expect.stringMatching(/the clean-up of boot boot-new left node worker-2 clean/),
      expect.stringMatching(/has been Ready for 600 s/),
      expect.stringMatching(/the taint is node.kubernetes.io\/out-of-service=nodeshutdown:NoExecute/),
    ]);
    expect(s?.evidence?.every((e) => e.status === 'holds')).toBe(true);
  });

  it('refuses same-boot when the boot is the first sight one and no Rebooted Event came after the taint', () => {
    expect(reasons(plan(facts({ node: { bootId: OLD }, cleanupJobs: cleanOf(OLD) }), job()))).toEqual([expect.stringMatching(/^same-boot: /)]);
  });

  it('takes a Rebooted Event after the taint even when the boot at first sight is the one now (seen after the reboot)', () => {
    expect(
      plan(facts({ node: { bootId: OLD }, cleanupJobs: cleanOf(OLD), rebooted: { ok: true, value: [{ at: '2026-12-07T08:20:00Z', bootId: OLD }] } }), job())
        .kind,
    ).toBe('steps');
  });

  it('does not count a Rebooted Event from before the taint', () => {
    const p = plan(facts({ rebooted: { ok: true, value: [{ at: '2026-12-07T07:00:00Z' }] } }), job({ bootIdAtFirstSight: undefined }));
    expect(reasons(p)).toEqual([expect.stringMatching(/^boot-unknown: no boot id was recorded/)]);
  });

  it('refuses boot-unknown when the Node reports no boot id', () => {
    expect(reasons(plan(facts({ node: { bootId: undefined } }), job()))[0]).toMatch(/^boot-unknown: Node worker-2 reports no/);
  });

  it('refuses volume-attachment-left, and when the list cannot be read', () => {
    expect(reasons(plan(facts({ volumeAttachments: { ok: true, value: ['csi-1'] } }), job()))).toEqual([
      expect.stringMatching(/^volume-attachment-left: VolumeAttachment csi-1/),
    ]);
    expect(reasons(plan(facts({ volumeAttachments: { ok: false, error: 'HTTP 500' } }), job()))).toEqual([
      expect.stringMatching(/^volume-attachment-left: .*HTTP 500/),
    ]);
  });

  it('refuses terminating-pod-left', () => {
    expect(reasons(plan(facts({ terminatingPods: { ok: true, value: ['shop/db-0'] } }), job()))).toEqual([
      expect.stringMatching(/^terminating-pod-left: pod shop\/db-0/),
    ]);
  });

  it('refuses another-remediator-owns-taint for a listed remediator, a forbidden list and the exclude label', () => {
    const snr = facts({ remediators: [{ kind: 'SelfNodeRemediation', state: 'listed', names: ['medik8s/worker-2'] }] });
    expect(reasons(plan(snr, job()))).toEqual([expect.stringMatching(/^another-remediator-owns-taint: SelfNodeRemediation medik8s\/worker-2/)]);
    const forbidden = facts({ remediators: [{ kind: 'Metal3Remediation', state: 'unknown', error: 'HTTP 403' }] });
    expect(reasons(plan(forbidden, job()))).toEqual([expect.stringMatching(/^another-remediator-owns-taint: cannot tell .*HTTP 403/)]);
    const excluded = facts({ node: { labels: { 'remediation.medik8s.io/exclude-from-remediation': 'true' } } });
    expect(reasons(plan(excluded, job()))).toEqual([expect.stringMatching(/^another-remediator-owns-taint: node worker-2 carries the label/)]);
  });

  it('refuses host-not-clean for a missing, refused or still running clean-up of this boot, and for an rbd-unmap that failed since the node came back', () => {
    expect(reasons(plan(facts({ cleanupJobs: { ok: true, value: [] } }), job()))).toEqual([
      expect.stringMatching(/^host-not-clean: no residual-multipath-cleanup job of boot boot-new/),
    ]);
    const running = facts({ cleanupJobs: { ok: true, value: [{ runbook: 'residual-multipath-cleanup', id: 'r', state: 'active', bootId: NEW }] } });
    expect(reasons(plan(running, job()))).toEqual([expect.stringMatching(/^host-not-clean: residual-multipath-cleanup r active/)]);
    const unmap = facts({
      cleanupJobs: {
        ok: true,
        value: [
          { runbook: 'residual-multipath-cleanup', id: 'r', state: 'completed', bootId: NEW, outcome: 'nothing-to-do' },
          { runbook: 'rbd-unmap', id: 'u', state: 'failed', finishedAt: '2026-12-07T08:40:00Z', outcome: 'refused' },
          { runbook: 'rbd-unmap', id: 'before', state: 'failed', finishedAt: '2026-12-07T07:40:00Z', outcome: 'failed' },
        ],
      },
    });
    expect(reasons(plan(unmap, job()))).toEqual([expect.stringMatching(/^host-not-clean: rbd-unmap u failed:/)]);
    expect(reasons(plan(facts({ cleanupJobs: { ok: false, error: 'redis down' } }), job()))).toEqual([expect.stringMatching(/^host-not-clean: .*redis down/)]);
  });

  it('parks rather than refuses a node Ready for less than the grace: the evidence holds with a persistence the engine waits on', () => {
    const p = plan(facts({ node: { readySince: '2026-12-07T08:58:00Z' } }), job());
    expect(p.kind).toBe('steps');
    if (p.kind !== 'steps') return;
    const verdict = judgeEvidence(p.steps[0]!, new Date(NOW));
    expect(verdict).toMatchObject({ kind: 'wait', until: new Date('2026-12-07T09:08:00Z') });
    expect(judgeEvidence(p.steps[0]!, new Date('2026-12-07T09:08:01Z'), Number.POSITIVE_INFINITY)).toEqual({ kind: 'go' });
  });

  it('refuses not-ready-long-enough for a node not Ready, or whose kubelet Lease is stale', () => {
    expect(reasons(plan(facts({ node: { ready: 'False' } }), job()))).toEqual([expect.stringMatching(/^not-ready-long-enough: Node worker-2 is not Ready/)]);
    expect(reasons(plan(facts({ leaseRenewTime: { ok: true, value: '2026-12-07T08:58:00Z' } }), job()))).toEqual([
      expect.stringMatching(/^not-ready-long-enough: the kubelet of worker-2 is not heartbeating/),
    ]);
  });

  it('refuses taint-changed when the taint now carries another timeAdded than the job', () => {
    const p = plan(facts({ node: { taints: [OTHER, { ...OOS, timeAdded: '2026-12-07T08:45:00Z' }] } }), job());
    expect(reasons(p)).toEqual([expect.stringMatching(/^taint-changed: /)]);
  });

  it('lists every claim that holds the taint, not only the first', () => {
    const p = plan(facts({ node: { bootId: OLD }, cleanupJobs: cleanOf(OLD), terminatingPods: { ok: true, value: ['a/b'] } }), job());
    expect(reasons(p).map((r) => r.split(':')[0])).toEqual(['same-boot', 'terminating-pod-left']);
  });

  it('has nothing to do when the taint is gone or the Node is', () => {
    expect(plan(facts({ node: { taints: [OTHER], oosIndex: -1 } }), job()).kind).toBe('nothing-to-do');
    expect(plan(facts({ nodeState: { ok: true, value: undefined } }), job()).kind).toBe('nothing-to-do');
  });

  it("lifts only our own blocklist entries of the node's addresses that Ceph still lists, before the taint", () => {
    const p = plan(
      facts({
        ourBlocklist: {
          ok: true,
          value: [
            { address: '10.0.0.2:0/3710147553', job: 'rbd_x', addedAt: '2026-12-07T08:05:00Z', listed: true },
            { address: '10.0.0.2:0/1', job: 'rbd_y', addedAt: '2026-12-07T08:05:00Z', listed: false },
            { address: '10.0.0.9:0/2', job: 'rbd_z', addedAt: '2026-12-07T08:05:00Z', listed: true },
          ],
        },
      }),
      job(),
    );
    expect(p.kind === 'steps' && p.steps.map((s) => s.id)).toEqual(['blocklist-rm:10.0.0.2:0/3710147553', `remove-taint:worker-2:${T0}`]);
  });

  it('says the remove-taint step is the Ceph unfence when Rook fences the node', () => {
    const p = plan(facts({ networkFence: { state: 'present', fenceState: 'Fenced', cidrs: ['10.0.0.2/32'] } }), job());
    expect(p.kind === 'steps' && p.steps[0]?.description).toMatch(/NetworkFence worker-2 fences the node in Ceph \(10.0.0.2\/32\).*also the Ceph unfence/);
  });
});
