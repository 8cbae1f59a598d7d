import type { V1VolumeAttachment } from '@kubernetes/client-node';
import type { StorageApi } from './apis.ts';
import type { VolumeAttachmentInfo } from '../lookups.ts';

// VolumeAttachments say which volumes the control plane still considers attached to a node: a
// multipath map whose WWID belongs to one of them is claimed and must not be cleaned. Drivers
// that record the LUN identity do so in status.attachmentMetadata under names of their choosing.

const WWN_KEY = /(wwn|wwid|serial)/i;

export function volumeAttachmentInfo(va: V1VolumeAttachment): VolumeAttachmentInfo {
  const metadata = { ...(va.status?.attachmentMetadata ?? {}) };
  const wwn = Object.entries(metadata).find(([k]) => WWN_KEY.test(k))?.[1];
  return {
    name: va.metadata?.name ?? '',
    attacher: va.spec.attacher,
    node: va.spec.nodeName,
    ...(va.spec.source.persistentVolumeName ? { pv: va.spec.source.persistentVolumeName } : {}),
    attached: va.status?.attached === true,
    metadata,
    ...(wwn ? { wwn } : {}),
  };
}

/** VolumeAttachments support no field selector on spec.nodeName: list and filter. */
export async function listVolumeAttachmentsOnNode(storage: StorageApi, node: string): Promise<VolumeAttachmentInfo[]> {
  const list = await storage.listVolumeAttachment({});
  return list.items.filter((va) => va.spec.nodeName === node).map(volumeAttachmentInfo);
}
