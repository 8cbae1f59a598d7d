import { describe, expect, it } from 'vitest';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { KubeNodeLabels } from '../../../../workers/node-agent/kube-node-labels.ts';

describe('node labels from the cluster lookups', () => {
  const lookups = new InMemoryLookups().addNode({
    name: 'worker-1',
    addresses: [],
    labels: { 'volume-medic.io/local-pv-placeholder': 'enabled' },
  });
  const labels = new KubeNodeLabels(lookups);

  it('reads the labels of a known node', async () => {
    expect(await labels.labelsOf('worker-1')).toEqual({ 'volume-medic.io/local-pv-placeholder': 'enabled' });
  });

  it('says null for a node the API server does not know, so the runbook refuses instead of guessing', async () => {
    expect(await labels.labelsOf('worker-9')).toBeNull();
  });
});
