import { describe, expect, it } from 'vitest';
import { remediationsOf } from '../../../../src/core/coordination/medik8s.ts';

describe('a medik8s remediation of the node', () => {
  it('is one named after the node, or one NodeHealthCheck annotated with it (remediation.medik8s.io/node-name)', () => {
    const items = [
      { metadata: { name: 'worker-1', namespace: 'medik8s' } },
      { metadata: { name: 'worker-1-x7k2p', namespace: 'medik8s', annotations: { 'remediation.medik8s.io/node-name': 'worker-1' } } },
      { metadata: { name: 'worker-2', namespace: 'medik8s' } },
      { metadata: { name: 'worker-10', namespace: 'medik8s', annotations: { 'remediation.medik8s.io/node-name': 'worker-10' } } },
    ];
    expect(remediationsOf('worker-1', items)).toEqual(['medik8s/worker-1', 'medik8s/worker-1-x7k2p']);
    expect(remediationsOf('worker-3', items)).toEqual([]);
  });
});
