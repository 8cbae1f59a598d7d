import type { V1Deployment, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1ReplicaSet, V1VolumeAttachment } from '@kubernetes/client-node';
import { InMemoryLookups } from '../lookups.ts';
import { volumeAttachmentInfo } from './attachments.ts';
import { nodeInfo } from './nodes.ts';
import { podInfo } from './pods.ts';
import { claimInfo, persistentVolumeInfo } from './volumes.ts';
import { deploymentInfo } from './workloads.ts';

// In-memory lookups from API objects (a `kubectl get -o json` dump, test fixtures), through the
// same converters the API-backed lookups use, so both answer alike.

type AnyObject = { kind?: string } & Record<string, unknown>;

export function lookupsFromObjects(items: readonly AnyObject[]): InMemoryLookups {
  const l = new InMemoryLookups();
  for (const o of items) {
    switch (o.kind) {
      case 'Node':
        l.addNode(nodeInfo(o as V1Node));
        break;
      case 'PersistentVolume':
        l.addPersistentVolume(persistentVolumeInfo(o as V1PersistentVolume));
        break;
      case 'PersistentVolumeClaim':
        l.addClaim(claimInfo(o as V1PersistentVolumeClaim));
        break;
      case 'Pod':
        l.addPod(podInfo(o as V1Pod));
        break;
      case 'VolumeAttachment':
        l.addVolumeAttachment(volumeAttachmentInfo(o as unknown as V1VolumeAttachment));
        break;
      case 'Deployment':
        l.addDeployment(deploymentInfo(o as V1Deployment));
        break;
      case 'ReplicaSet': {
        const rs = o as V1ReplicaSet;
        const owner = rs.metadata?.ownerReferences?.find((r) => r.controller && r.kind === 'Deployment');
        l.addReplicaSet({ namespace: rs.metadata?.namespace ?? '', name: rs.metadata?.name ?? '' }, owner?.name);
        break;
      }
      default:
        break;
    }
  }
  return l;
}
