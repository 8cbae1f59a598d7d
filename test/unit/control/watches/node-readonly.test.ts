import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NodeReadonlyTracker } from '../../../../src/control/watches/node-readonly.ts';

const conditions = JSON.parse(readFileSync(new URL('../../../fixtures/npd/readonly-filesystem.conditions.json', import.meta.url), 'utf8')) as {
  node: string;
  conditions: Array<Record<string, string>>;
};
const nodeWith = (conds: Array<Record<string, string>>) => ({ metadata: { name: conditions.node }, status: { conditions: conds } });

describe("the Node watch's read-only file system trigger (NPD's permanent conditions)", () => {
  it('signals ReadonlyFilesystem=True (FilesystemIsReadOnly) once per transition, with the identity the NPD webhook gives it', () => {
    const t = new NodeReadonlyTracker();
    const [signal, ...more] = t.observe(nodeWith(conditions.conditions));
    expect(more).toEqual([]);
    expect(signal).toMatchObject({
      kind: 'filesystem-readonly',
      node: 'worker-3',
      identity: ['npd-condition', 'worker-3', 'ReadonlyFilesystem', '2026-12-07T09:50:01Z'],
    });
    expect(signal?.evidence.source).toBe('k8s-watch');
    // NPD never clears it: the same condition on every later update is not a new signal.
    expect(t.observe(nodeWith(conditions.conditions))).toEqual([]);
    // A new transition (after NPD restarted and it turned True again) is.
    const again = conditions.conditions.map((c) => (c['type'] === 'ReadonlyFilesystem' ? { ...c, lastTransitionTime: '2026-12-08T01:00:00Z' } : c));
    expect(t.observe(nodeWith(again))).toHaveLength(1);
  });

  it('ignores the default FilesystemIsNotReadOnly, another reason, and other conditions', () => {
    const t = new NodeReadonlyTracker();
    expect(
      t.observe(nodeWith([{ type: 'ReadonlyFilesystem', status: 'False', reason: 'FilesystemIsNotReadOnly', lastTransitionTime: '2026-12-01T00:00:00Z' }])),
    ).toEqual([]);
    expect(t.observe(nodeWith([{ type: 'ReadonlyFilesystem', status: 'True', reason: 'SomethingElse', lastTransitionTime: '2026-12-01T00:00:00Z' }]))).toEqual(
      [],
    );
    expect(t.observe(nodeWith([{ type: 'KernelDeadlock', status: 'True', reason: 'DockerHung', lastTransitionTime: '2026-12-01T00:00:00Z' }]))).toEqual([]);
    expect(t.observe(nodeWith([{ type: 'XfsShutdown', status: 'True', reason: 'XfsHasShutdown', lastTransitionTime: '2026-12-01T00:00:00Z' }]))).toHaveLength(
      1,
    );
  });
});
