import type { ClusterLookups } from '../../src/adapters/kube/lookups.ts';
import type { NodeLabels } from '../runbooks/local-pv-placeholder/index.ts';

/** The node's labels as the API server has them: whether a node opted in is read per job, so a label change needs no restart. */
export class KubeNodeLabels implements NodeLabels {
  readonly #lookups: Pick<ClusterLookups, 'node'>;

  constructor(lookups: Pick<ClusterLookups, 'node'>) {
    this.#lookups = lookups;
  }

  async labelsOf(node: string): Promise<Readonly<Record<string, string>> | null> {
    return (await this.#lookups.node(node))?.labels ?? null;
  }
}
