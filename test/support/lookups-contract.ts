import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ClusterLookups } from '../../src/adapters/kube/lookups.ts';

// One contract, two implementations (one suite run against both): the in-memory lookups (unit tier) and the
// API-backed lookups against the fake API server (integration tier) answer the same questions on
// the same fixture objects.

export const CLUSTER_FIXTURE: { items: Array<Record<string, any>> } = JSON.parse(
  readFileSync(new URL('../fixtures/kube/cluster.json', import.meta.url), 'utf8'),
);

const LOCAL_PV = 'local-pv-3f8a1c2e';
const CEPH_PV = 'pvc-8d2c6b1e-4f3a-4b5c-9d8e-7f6a5b4c3d2e';
const ISCSI_PV = 'pvc-5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170';

export function lookupsContract(name: string, lookups: () => ClusterLookups): void {
  describe(`ClusterLookups contract: ${name}`, () => {
    it('finds a node by name with its boot id and Ready status', async () => {
      const n = await lookups().node('worker-1');
      expect(n).toMatchObject({ name: 'worker-1', ready: 'True', bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26' });
      expect(n!.addresses).toContainEqual({ type: 'InternalIP', address: '10.0.0.11' });
      expect(await lookups().node('worker-9')).toBeUndefined();
    });

    it('finds a node by any of its addresses and by none other', async () => {
      expect((await lookups().nodesByAddress('10.0.0.12')).map((n) => n.name)).toEqual(['worker-2']);
      expect((await lookups().nodesByAddress('192.0.2.12')).map((n) => n.name)).toEqual(['worker-2']);
      expect(await lookups().nodesByAddress('10.0.0.1')).toEqual([]);
    });

    it('reads since when a node is not Ready and its taints, the out-of-service one included', async () => {
      const n = await lookups().node('worker-3');
      expect(n).toMatchObject({ name: 'worker-3', ready: 'Unknown', readySince: '2025-03-14T05:50:41.000Z' });
      expect(n!.taints).toContainEqual({
        key: 'node.kubernetes.io/out-of-service',
        value: 'nodeshutdown',
        effect: 'NoExecute',
        timeAdded: '2025-03-14T06:02:10.000Z',
      });
      expect(n!.taints).toContainEqual({
        key: 'node.kubernetes.io/unreachable',
        effect: 'NoSchedule',
        timeAdded: '2025-03-14T05:50:41.000Z',
      });
      expect((await lookups().nodesByAddress('10.0.0.13'))[0]).toMatchObject({ name: 'worker-3', readySince: '2025-03-14T05:50:41.000Z' });
      expect((await lookups().node('worker-2'))?.taints).toBeUndefined();
    });

    it('reads a Local PV: Block mode, its path and the single node of its affinity', async () => {
      expect(await lookups().persistentVolume(LOCAL_PV)).toMatchObject({
        name: LOCAL_PV,
        volumeMode: 'Block',
        phase: 'Bound',
        local: { path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-1' },
        claim: { namespace: 'kafka', name: 'data-kafka-0' },
      });
    });

    it('leaves the node unset for a Local PV whose affinity allows two hosts', async () => {
      const pv = await lookups().persistentVolume('local-pv-two-hosts');
      expect(pv?.local).toEqual({ path: '/dev/disk/by-id/wwn-0x5000c500deadbeef' });
    });

    it('finds a Local PV by path, and by path + node only on its own node', async () => {
      const path = '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4';
      expect((await lookups().persistentVolumeByLocalPath(path))?.name).toBe(LOCAL_PV);
      expect((await lookups().persistentVolumeByLocalPath(path, 'worker-1'))?.name).toBe(LOCAL_PV);
      expect(await lookups().persistentVolumeByLocalPath(path, 'worker-2')).toBeUndefined();
      expect(await lookups().persistentVolumeByLocalPath('/dev/disk/by-id/wwn-0x0')).toBeUndefined();
    });

    it('reads a ceph-csi PV as an rbd pool/image with its driver attributes', async () => {
      const pv = await lookups().persistentVolume(CEPH_PV);
      expect(pv).toMatchObject({
        volumeMode: 'Filesystem',
        accessModes: ['ReadWriteOnce'],
        rbd: { pool: 'replicapool', image: 'csi-vol-0b3f5f8e-3c1d-4a2b-9e8f-7d6c5b4a3f2e' },
        csi: {
          driver: 'rook-ceph.rbd.csi.ceph.com',
          volumeHandle: '0001-0009-rook-ceph-0000000000000002-0b3f5f8e-3c1d-4a2b-9e8f-7d6c5b4a3f2e',
        },
      });
      expect(pv?.local).toBeUndefined();
      expect(await lookups().persistentVolume('pvc-missing')).toBeUndefined();
    });

    it('gives the PVC bound to a PV and the pods that use it', async () => {
      expect(await lookups().claimOfVolume(CEPH_PV)).toMatchObject({
        namespace: 'shop',
        name: 'data-web',
        volumeName: CEPH_PV,
        accessModes: ['ReadWriteOnce'],
      });
      const pods = await lookups().podsUsingVolume(CEPH_PV);
      expect(pods.map((p) => `${p.name}@${p.node}:${p.phase}`).sort()).toEqual([
        'web-5f8e7d6c4-m9wzt@worker-1:Pending',
        'web-7d4b9c6f5-x2kqp@worker-2:Running',
      ]);
      expect(await lookups().claimOfVolume('local-pv-two-hosts')).toBeUndefined();
      expect(await lookups().podsUsingVolume(ISCSI_PV)).toEqual([]);
    });

    it('lists only the pods on the given node that use the claim, with phase and waiting reason', async () => {
      const onW2 = await lookups().podsOnNodeUsingClaim('worker-2', { namespace: 'shop', name: 'data-web' });
      expect(onW2).toHaveLength(1);
      expect(onW2[0]).toMatchObject({ name: 'web-7d4b9c6f5-x2kqp', phase: 'Running', waiting: [] });
      const onW1 = await lookups().podsOnNodeUsingClaim('worker-1', { namespace: 'shop', name: 'data-web' });
      expect(onW1[0]).toMatchObject({
        name: 'web-5f8e7d6c4-m9wzt',
        phase: 'Pending',
        waiting: [{ container: 'web', reason: 'ContainerCreating' }],
      });
      expect(await lookups().podsOnNodeUsingClaim('worker-2', { namespace: 'kafka', name: 'data-kafka-0' })).toEqual([]);
    });

    it('lists every pod on a node, across namespaces, with its claims, and none of other nodes', async () => {
      const w1 = await lookups().podsOnNode('worker-1');
      expect(w1.map((p) => `${p.namespace}/${p.name}`).sort()).toEqual(['kafka/kafka-0', 'shop/web-5f8e7d6c4-m9wzt']);
      expect(w1.every((p) => p.node === 'worker-1')).toBe(true);
      expect(w1.find((p) => p.name === 'web-5f8e7d6c4-m9wzt')?.claims).toEqual(['data-web']);
      expect((await lookups().podsOnNode('worker-2')).map((p) => p.name)).toEqual(['web-7d4b9c6f5-x2kqp']);
      expect(await lookups().podsOnNode('worker-3')).toEqual([]);
    });

    it('lists every pod of the cluster, of every node and namespace, with its UID', async () => {
      const all = await lookups().allPods();
      expect(all.map((p) => `${p.namespace}/${p.name}`)).toEqual(
        expect.arrayContaining(['kafka/kafka-0', 'shop/web-5f8e7d6c4-m9wzt', 'shop/web-7d4b9c6f5-x2kqp']),
      );
      expect(all.length).toBeGreaterThanOrEqual((await lookups().podsOnNode('worker-1')).length + (await lookups().podsOnNode('worker-2')).length);
    });

    it('reads one pod with its uid, node and controller, and nothing for a pod that does not exist', async () => {
      const pod = await lookups().pod({ namespace: 'shop', name: 'web-7d4b9c6f5-x2kqp' });
      expect(pod).toMatchObject({ namespace: 'shop', name: 'web-7d4b9c6f5-x2kqp', node: 'worker-2', claims: ['data-web'] });
      expect(await lookups().pod({ namespace: 'shop', name: 'no-such-pod' })).toBeUndefined();
    });

    it('lists the VolumeAttachments of a node with the LUN WWN when the driver records it', async () => {
      const w1 = await lookups().volumeAttachmentsOnNode('worker-1');
      expect(w1).toEqual([
        expect.objectContaining({
          attacher: 'iscsi.csi.example.com',
          node: 'worker-1',
          pv: ISCSI_PV,
          attached: true,
          wwn: '3600140554a3b2c1d0e9f8a7b6c5d4e3f',
        }),
      ]);
      const w2 = await lookups().volumeAttachmentsOnNode('worker-2');
      expect(w2).toEqual([expect.objectContaining({ attacher: 'rook-ceph.rbd.csi.ceph.com', pv: CEPH_PV, attached: true })]);
      expect(w2[0]!.wwn).toBeUndefined();
      expect(await lookups().volumeAttachmentsOnNode('worker-3')).toEqual([]);
    });

    it('walks pod -> ReplicaSet -> Deployment and reports a RollingUpdate with maxSurge', async () => {
      expect(await lookups().deploymentOfPod({ namespace: 'shop', name: 'web-5f8e7d6c4-m9wzt' })).toEqual({
        namespace: 'shop',
        name: 'web',
        strategy: 'RollingUpdate',
        maxSurge: '25%',
        maxUnavailable: '25%',
        replicas: 1,
        claims: ['data-web'],
      });
    });

    it("gives the PVs bound to a pod's claims, and none for an unknown pod", async () => {
      expect((await lookups().volumesOfPod({ namespace: 'kafka', name: 'kafka-0' })).map((pv) => [pv.name, pv.volumeMode, pv.local?.path])).toEqual([
        ['local-pv-3f8a1c2e', 'Block', expect.stringMatching(/^\/dev\/disk\/by-id\//)],
      ]);
      expect(await lookups().volumesOfPod({ namespace: 'kafka', name: 'no-such-pod' })).toEqual([]);
    });

    it("gives no PV to a pod whose PVC names a PV bound to another namespace's claim", async () => {
      // tenant-a/borrowed sets volumeName local-pv-3f8a1c2e, whose claimRef is kafka/data-kafka-0.
      expect(await lookups().volumesOfPod({ namespace: 'tenant-a', name: 'squatter' })).toEqual([]);
    });

    it('gives no Deployment for a StatefulSet pod or a pod whose ReplicaSet is gone', async () => {
      expect(await lookups().deploymentOfPod({ namespace: 'kafka', name: 'kafka-0' })).toBeUndefined();
      expect(await lookups().deploymentOfPod({ namespace: 'shop', name: 'web-7d4b9c6f5-x2kqp' })).toBeUndefined();
      expect(await lookups().deploymentOfPod({ namespace: 'shop', name: 'no-such-pod' })).toBeUndefined();
    });
  });
}
