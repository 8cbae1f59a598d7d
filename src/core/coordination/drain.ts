// What counts as a drain of a node, here (docs/safety.md, "Other tools on the node"): the node is
// cordoned (spec.unschedulable: true, as `kubectl drain`, kured and cluster-autoscaler set it)
// AND at least one pod bound to it is terminating (metadata.deletionTimestamp set: an eviction
// or a delete under way; the Eviction API sets it too). Cordoned alone with nothing terminating
// is not a drain (a node an operator set aside, or a drain that has finished); neither is a pod
// terminating on a schedulable node (an ordinary rollout). Between two evictions of a drain no
// pod may be terminating for a moment: kured's drains are covered all along by its lock.

export interface DrainNode {
  unschedulable?: boolean | undefined;
}

export interface DrainPod {
  namespace?: string | undefined;
  name: string;
  deletionTimestamp?: string | null | undefined;
}

/** Why the node is being drained (its terminating pods, a few named), or undefined when it is not. */
export function drainOf(node: string, spec: DrainNode, pods: readonly DrainPod[]): string | undefined {
  if (spec.unschedulable !== true) return undefined;
  const terminating = pods.filter((p) => p.deletionTimestamp).map((p) => `${p.namespace ?? ''}/${p.name}`);
  if (terminating.length === 0) return undefined;
  const named = terminating.slice(0, 3).join(', ');
  const more = terminating.length > 3 ? ` and ${terminating.length - 3} more` : '';
  return `${node} is cordoned and ${terminating.length} pod(s) on it are terminating: ${named}${more}`;
}
