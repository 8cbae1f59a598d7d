import { sameWwid } from './wwid.ts';

// Which LUNs Kubernetes still wants attached to a node (VolumeAttachments whose PV resolves to a
// WWID). A port so this runbook does not depend on the Kubernetes client: the node agent passes
// one backed by ClusterLookups.volumeAttachmentsOnNode; tests and clusterless runs use memory.

export interface AttachedVolumes {
  /**
   * WWIDs (multipath form, or the bare NAA hex) of volumes attached to `node`; 'unknown' when it
   * cannot be known (no cluster access, a volume whose WWID cannot be resolved). Throws when the
   * lookup failed and a retry may succeed.
   */
  wwidsAttachedTo(node: string): Promise<Set<string> | 'unknown'>;
}

export class InMemoryAttachedVolumes implements AttachedVolumes {
  readonly #byNode = new Map<string, Set<string>>();
  readonly #known: boolean;

  /** `known: false` answers 'unknown' for every node (no cluster to ask). */
  constructor(initial: Record<string, readonly string[]> = {}, options: { known?: boolean } = {}) {
    this.#known = options.known ?? true;
    for (const [node, wwids] of Object.entries(initial)) this.#byNode.set(node, new Set(wwids));
  }

  attach(node: string, wwid: string): this {
    const set = this.#byNode.get(node) ?? new Set<string>();
    set.add(wwid);
    this.#byNode.set(node, set);
    return this;
  }

  async wwidsAttachedTo(node: string): Promise<Set<string> | 'unknown'> {
    if (!this.#known) return 'unknown';
    return new Set(this.#byNode.get(node) ?? []);
  }
}

export const isAttached = (attached: Iterable<string>, wwid: string): boolean => [...attached].some((a) => sameWwid(a, wwid));
