import { describe, expect, it } from 'vitest';
import type { CommandRecord } from '../../../../src/core/catalogue/result.ts';
import { createAuditKubeWrites, createDryRunKubeWrites } from '../../../../workers/kube-writes/audit-kube-writes.ts';
import { PreconditionFailedError } from '../../../../workers/kube-writes/kube-writes.ts';
import { RecordingKubeWrites } from '../../../testkit/recording-kube-writes.ts';

// The write port's audit twin (the Host's is audit-host.ts): every write is a CommandRecord in the
// job's result, `kube:<call> ...`; simulated, nothing reaches the port under it.

const del = { namespace: 'shop', name: 'db-0', uid: 'u-1', resourceVersion: '812', reason: 'read-only volume' };
const ops = [
  { op: 'test' as const, path: '/metadata/resourceVersion', value: '9' },
  { op: 'remove' as const, path: '/spec/taints/0' },
];
const event = { involved: { kind: 'Node' as const, name: 'worker-1' }, reason: 'OutOfServiceTaintReleased', message: 'released', type: 'Normal' as const };

function audited(simulate: boolean, inner = new RecordingKubeWrites()) {
  const records: CommandRecord[] = [];
  return { inner, records, kube: createAuditKubeWrites(inner, { simulate, sink: (r) => records.push(r) }) };
}

describe('audit-kube-writes', () => {
  it('simulated: records each write with its argv and no exit code, sends nothing, and answers as if it had happened', async () => {
    const { inner, records, kube } = audited(true, RecordingKubeWrites.throwing());
    expect(await kube.deletePod({ ...del, gracePeriodSeconds: 0 })).toBe(true);
    await kube.patchNodeTaints({ node: 'worker-1', ops, reason: 'r' });
    await kube.event(event);
    expect(inner.calls).toEqual([]);
    expect(records.map((r) => [r.argv, r.exitCode, r.durationMs])).toEqual([
      [['kube:delete-pod', 'shop/db-0', 'uid=u-1', 'rv=812', 'grace=0'], null, 0],
      [['kube:patch-node', 'worker-1', JSON.stringify(ops)], null, 0],
      [['kube:event', 'Node/worker-1', 'Normal', 'OutOfServiceTaintReleased', 'released'], null, 0],
    ]);
  });

  it('createDryRunKubeWrites is the simulating twin', async () => {
    const inner = RecordingKubeWrites.throwing();
    const argv: string[][] = [];
    await createDryRunKubeWrites(inner, (r) => argv.push(r.argv)).deletePod(del);
    expect(inner.calls).toEqual([]);
    expect(argv).toEqual([['kube:delete-pod', 'shop/db-0', 'uid=u-1', 'rv=812']]);
  });

  it('audited: the write reaches the port as asked and is recorded with exit 0 and what happened', async () => {
    const { inner, records, kube } = audited(false);
    expect(await kube.deletePod(del)).toBe(true);
    inner.deleted = false;
    expect(await kube.deletePod(del)).toBe(false);
    await kube.patchNodeTaints({ node: 'worker-1', ops, reason: 'r' });
    expect(inner.calls).toEqual([
      { method: 'deletePod', request: del },
      { method: 'deletePod', request: del },
      { method: 'patchNodeTaints', request: { node: 'worker-1', ops, reason: 'r' } },
    ]);
    expect(records.map((r) => [r.argv[0], r.exitCode, r.stdout])).toEqual([
      ['kube:delete-pod', 0, 'deleted'],
      ['kube:delete-pod', 0, 'already gone'],
      ['kube:patch-node', 0, ''],
    ]);
  });

  it('audited: a refused write is recorded with exit 1 and the reason (at most 2 KiB), and the same error reaches the step', async () => {
    const inner = new RecordingKubeWrites();
    const refused = new PreconditionFailedError(`node worker-1 is no longer as the patch's test ops expect: ${'x'.repeat(5000)}`, 422);
    inner.failWith = refused;
    const { records, kube } = audited(false, inner);
    await expect(kube.patchNodeTaints({ node: 'worker-1', ops, reason: 'r' })).rejects.toBe(refused);
    expect(records).toHaveLength(1);
    expect(records[0]?.exitCode).toBe(1);
    expect(records[0]?.stderr).toHaveLength(2048);
    expect(records[0]?.stderr.startsWith('node worker-1 is no longer')).toBe(true);
  });
});
