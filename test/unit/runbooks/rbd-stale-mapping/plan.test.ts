import { describe, expect, it } from 'vitest';
import { RbdUnmapJob } from '../../../../src/catalogue/jobs.ts';
import { queueFor } from '../../../../src/catalogue/queues.ts';
import { plan, unmapJobKey } from '../../../../workers/runbooks/rbd-stale-mapping/index.ts';
import { facts, job, watcher } from './facts.fixture.ts';

const gone = watcher({ address: '10.0.0.3:0/42', ip: '10.0.0.3', node: { name: 'worker-3', ready: 'Unknown' }, role: 'not-ready-node' });
const unknown = watcher({ address: '10.0.0.9:0/7', ip: '10.0.0.9', node: null, role: 'unknown-address' });

describe('rbd-stale-mapping plan', () => {
  it('hands the unmap to a Ready watcher node, as a valid node job on that node\'s queue with the parent\'s lineage', () => {
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
    expect(queueFor(node)).toBe('vm-node-worker-2');
  });

  it('gives the same node job key for the same parent and watcher, and different keys for different watchers', () => {
    expect(unmapJobKey(job.key, '10.0.0.2:0/1')).toBe(unmapJobKey(job.key, '10.0.0.2:0/1'));
    expect(unmapJobKey(job.key, '10.0.0.2:0/1')).not.toBe(unmapJobKey(job.key, '10.0.0.2:0/2'));
  });

  it('ignores the requesting pod\'s own node, and is done when no other watcher is left', () => {
    const p = plan(facts({ watchers: [watcher({ node: { name: 'worker-1', ready: 'True' }, role: 'requester' })] }), job);
    expect(p).toMatchObject({ kind: 'nothing-to-do' });
    expect(plan(facts({ watchers: [] }), job)).toMatchObject({ kind: 'nothing-to-do', summary: expect.stringContaining('freed itself') });
  });

  it('refuses a real multi-attach: a running pod on the watcher\'s node still uses the PVC', () => {
    const p = plan(facts({ watchers: [watcher({ podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-2', phase: 'Running' }] })] }), job);
    expect(p.kind).toBe('refuse');
    if (p.kind === 'refuse') expect(p.reasons[0]).toMatch(/^real multi-attach: pod shop\/db-old \(Running\) on node worker-2/);
  });

  it('does not count a finished pod on the watcher\'s node as a user', () => {
    const p = plan(facts({ watchers: [watcher({ podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-2', phase: 'Succeeded' }] })] }), job);
    expect(p.kind).toBe('steps');
  });

  it('refuses to hand over when no PVC is known, since a user on that node cannot be ruled out', () => {
    const p = plan(facts({ volume: null }), job);
    expect(p).toMatchObject({ kind: 'refuse', reasons: [expect.stringContaining('no PVC is known')] });
  });

  it('fences gone and unknown watchers when fencing is on, recording the undo', () => {
    const p = plan(facts({ watchers: [gone, unknown] }), job);
    expect(p.kind).toBe('steps');
    if (p.kind !== 'steps') return;
    expect(p.steps.map((s) => s.id)).toEqual(['blocklist-add:10.0.0.3:0/42', 'blocklist-add:10.0.0.9:0/7']);
    expect(p.steps[0]).toMatchObject({ kind: 'blocklist-add', destructive: true, expirySeconds: 3600, headerObject: 'rbd_header.1012658802dd', undo: ['ceph', 'osd', 'blocklist', 'rm', '10.0.0.3:0/42'] });
    expect(p.summary).toContain('undo: `ceph osd blocklist rm 10.0.0.3:0/42`');
  });

  it('fences a NotReady node even though the API still shows its pod Running (its last known phase)', () => {
    const stale = { ...gone, podsOnNode: [{ namespace: 'shop', name: 'db-old', node: 'worker-3', phase: 'Running' }] };
    expect(plan(facts({ watchers: [stale] }), job).kind).toBe('steps');
  });

  it('under the approval policy plans the fence as a high-risk step the engine holds for approval, and says how by hand when fencing is off', () => {
    const approval = plan(facts({ watchers: [gone], fencing: 'approval' }), job);
    expect(approval).toMatchObject({ kind: 'steps', steps: [{ kind: 'blocklist-add', address: '10.0.0.3:0/42', risk: 'high', destructive: true, undo: ['ceph', 'osd', 'blocklist', 'rm', '10.0.0.3:0/42'] }] });
    const on = plan(facts({ watchers: [gone], fencing: 'on' }), job);
    expect(on).toMatchObject({ kind: 'steps', steps: [{ kind: 'blocklist-add' }] });
    expect((on as { steps: Array<{ risk?: string }> }).steps[0]!.risk).toBeUndefined();
    const off = plan(facts({ watchers: [unknown], fencing: 'off' }), job);
    expect(off).toMatchObject({ kind: 'refuse', reasons: [expect.stringContaining('fencing is off: to release kube/csi-vol-0001, run `ceph osd blocklist add 10.0.0.9:0/7 3600`')] });
  });

  it('refuses everything when one watcher must be refused (no half-done release)', () => {
    const p = plan(facts({ watchers: [watcher(), { ...gone }], fencing: 'off' }), job);
    expect(p.kind).toBe('refuse');
  });

  it('refuses a watcher listing it cannot read, and an image that does not exist', () => {
    expect(plan(facts({ unparsedWatchers: ['watcher=v2:1.2.3.4:0/1 client.1 cookie=1'] }), job).kind).toBe('refuse');
    expect(plan(facts({ imageInfo: null, imageError: "rbd: error opening image csi-vol-0001: (2) No such file or directory" }), job))
      .toMatchObject({ kind: 'refuse', reasons: [expect.stringContaining('does not exist')] });
  });

  it('refuses a watcher already blocklisted that still watches rather than fencing again', () => {
    expect(plan(facts({ watchers: [gone], blocklisted: ['10.0.0.3:0/42'] }), job)).toMatchObject({ kind: 'refuse', reasons: [expect.stringContaining('already blocklisted')] });
  });

  it('carries the prevention advice into the summary and into refusals', () => {
    const advice = 'Deployment shop/db uses the ReadWriteOnce PVC shop/db-data with strategy RollingUpdate and maxSurge 1';
    const p = plan(facts({ advice }), job);
    expect(p.kind === 'steps' && p.summary).toContain(`Prevention: ${advice}`);
    const r = plan(facts({ advice, volume: null }), job);
    expect(r.kind === 'refuse' && r.reasons.at(-1)).toBe(`prevention: ${advice}`);
  });
});
