// Whether a node opted in to placeholders is a node label. The lookup is a port so the runbook
// does not depend on the Kubernetes client; the node agent can pass a kube-backed one later.

export interface NodeLabels {
  /** The node's labels, or null when the node is unknown. Throws when the lookup failed (retry). */
  labelsOf(node: string): Promise<Readonly<Record<string, string>> | null>;
}

export interface OptInLabel {
  key: string;
  value: string;
}

/** Default opt-in label: `volume-medic.io/local-pv-placeholder=enabled`. */
export const DEFAULT_OPT_IN_LABEL: OptInLabel = { key: 'volume-medic.io/local-pv-placeholder', value: 'enabled' };

export class InMemoryNodeLabels implements NodeLabels {
  readonly #labels = new Map<string, Record<string, string>>();

  constructor(initial: Record<string, Record<string, string>> = {}) {
    for (const [node, labels] of Object.entries(initial)) this.#labels.set(node, { ...labels });
  }

  set(node: string, labels: Record<string, string>): void {
    this.#labels.set(node, { ...labels });
  }

  async labelsOf(node: string): Promise<Readonly<Record<string, string>> | null> {
    return this.#labels.get(node) ?? null;
  }
}
