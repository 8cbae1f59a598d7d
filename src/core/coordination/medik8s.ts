// medik8s remediations (docs/safety.md, "Other tools on the node"): NodeHealthCheck creates a
// remediation object for an unhealthy node from its template, in the template's namespace: a
// SelfNodeRemediation or FenceAgentsRemediation named after the node, or, for a remediator that
// supports several templates, `<node>-<random>` with the annotation
// `remediation.medik8s.io/node-name: <node>` (node-healthcheck-operator, resources/manager.go:
// it sets that annotation and `remediation.medik8s.io/template-name` on every object it makes).
// NodeHealthCheck sets no annotation on the Node itself. The object exists for as long as the
// remediation runs (its deletion waits for the remediator's finalizer), so its presence is the
// signal, deleting or not.

const NHC_NODE_NAME_ANNOTATION = 'remediation.medik8s.io/node-name';

export interface RemediationObject {
  metadata: { name: string; namespace?: string | undefined; annotations?: Readonly<Record<string, string>> | null | undefined };
}

/** The objects of a remediation list that remediate `node`, as namespace/name. */
export function remediationsOf(node: string, items: readonly RemediationObject[]): string[] {
  return items
    .filter((o) => o.metadata.name === node || o.metadata.annotations?.[NHC_NODE_NAME_ANNOTATION] === node)
    .map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`);
}
