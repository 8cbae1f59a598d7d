import { describe, expect, it } from 'vitest';
import { InMemoryLookups, type VolumeAttachmentInfo } from '../../../../src/adapters/kube/lookups.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { agentKubeApis, KubeAttachedVolumes, KubeNodeLabels, KubeOrphanKube, UnknownNodePods } from '../../../../workers/node-agent/node-kube.ts';

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

describe('attached volumes from the cluster lookups', () => {
  const va = (name: string, rest: Partial<VolumeAttachmentInfo>): VolumeAttachmentInfo => ({
    name,
    attacher: 'fc.csi.example',
    node: 'worker-1',
    attached: true,
    metadata: {},
    ...rest,
  });

  it("gives the WWNs of the node's attached volumes, from the attachment or its PV, and skips detached ones", async () => {
    const lookups = new InMemoryLookups([{ name: 'pv-b', volumeMode: 'Block', wwn: '3600b' }])
      .addVolumeAttachment(va('va-a', { wwn: '3600a' }))
      .addVolumeAttachment(va('va-b', { pv: 'pv-b' }))
      .addVolumeAttachment(va('va-c', { wwn: '3600c', attached: false }));
    expect(await new KubeAttachedVolumes(lookups).wwidsAttachedTo('worker-1')).toEqual(new Set(['3600a', '3600b']));
  });

  it("says 'unknown', not a partial set, when an attached volume's WWN cannot be told", async () => {
    const lookups = new InMemoryLookups().addVolumeAttachment(va('va-a', { wwn: '3600a' })).addVolumeAttachment(va('va-x', { pv: 'pv-gone' }));
    expect(await new KubeAttachedVolumes(lookups).wwidsAttachedTo('worker-1')).toBe('unknown');
  });
});

describe('without cluster access', () => {
  it('the pods on the node are refused, not an empty list that would make every mount look stale', async () => {
    await expect(new UnknownNodePods().podsOnNode()).rejects.toBeInstanceOf(RefusedError);
  });

  it('neither in a pod nor with a KUBECONFIG, the agent has no client for the API server', async () => {
    expect(await agentKubeApis({})).toBeUndefined();
  });
});

describe("orphaned-pod-volumes' questions to the cluster", () => {
  const lookups = new InMemoryLookups()
    .addPod({ namespace: 'shop', name: 'web-0', uid: '0b8c1e1a-1c2d-4e5f-8a9b-0c1d2e3f4a5b', node: 'worker-2', phase: 'Running', claims: [], waiting: [] })
    .addPod({ namespace: 'shop', name: 'no-uid', node: 'worker-1', claims: [], waiting: [] })
    .addVolumeAttachment({ name: 'csi-1', attacher: 'rbd.csi.ceph.com', node: 'worker-1', pv: 'pvc-1', attached: true, metadata: {} })
    .addVolumeAttachment({ name: 'csi-2', attacher: 'rbd.csi.ceph.com', node: 'worker-2', pv: 'pvc-2', attached: true, metadata: {} });
  const kube = new KubeOrphanKube(lookups);

  it('knows every pod by UID, of any node', async () => {
    expect(await kube.podsByUid()).toEqual({ '0b8c1e1a-1c2d-4e5f-8a9b-0c1d2e3f4a5b': 'shop/web-0' });
  });

  it("lists the PVs the node's VolumeAttachments name", async () => {
    expect(await kube.attachedPvs('worker-1')).toEqual(['pvc-1']);
  });
});
