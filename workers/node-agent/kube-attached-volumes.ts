import type { ClusterLookups } from '../../src/adapters/kube/lookups.ts';
import type { AttachedVolumes } from '../runbooks/residual-multipath-cleanup/index.ts';

/**
 * The LUNs Kubernetes still wants on a node: the WWNs of its attached VolumeAttachments, from the
 * attachment's metadata or its PV. If any attached volume's WWN cannot be told, the answer is
 * 'unknown' rather than a partial set: a partial set would read as "not claimed" for exactly the
 * LUN we could not resolve.
 */
export class KubeAttachedVolumes implements AttachedVolumes {
  readonly #lookups: Pick<ClusterLookups, 'volumeAttachmentsOnNode' | 'persistentVolume'>;

  constructor(lookups: Pick<ClusterLookups, 'volumeAttachmentsOnNode' | 'persistentVolume'>) {
    this.#lookups = lookups;
  }

  async wwidsAttachedTo(node: string): Promise<Set<string> | 'unknown'> {
    const wwids = new Set<string>();
    for (const va of await this.#lookups.volumeAttachmentsOnNode(node)) {
      if (!va.attached) continue;
      const wwn = va.wwn ?? (va.pv ? (await this.#lookups.persistentVolume(va.pv))?.wwn : undefined);
      if (!wwn) return 'unknown';
      wwids.add(wwn);
    }
    return wwids;
  }
}
