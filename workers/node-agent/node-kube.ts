import { KubeLookups } from '../../src/adapters/kube/api/kube-lookups.ts';
import { JobEventRecorder } from '../../src/adapters/kube/job-events.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { JobEventSink } from '../engine/job-event-sink.ts';
import type { NodeLabels } from '../runbooks/local-pv-placeholder/node-labels.ts';
import { agentKubeApis } from './kube-apis.ts';
import { KubeAttachedVolumes } from './kube-attached-volumes.ts';
import { KubeNodeLabels } from './kube-node-labels.ts';
import { KubeNodePods } from './kube-node-pods.ts';
import type { NodeRegistryDeps } from './registry.ts';

// What the node agent learns from the API server, in a pod (or with KUBECONFIG): its node's
// labels, VolumeAttachments and pods, and where its jobs' Events go. Elsewhere labels come from
// NODE_LABELS, attachments are unknown and the RBD node half refuses (it cannot tell stale mounts
// from live ones).

export interface NodeKube {
  inCluster: boolean;
  nodeLabels?: NodeLabels;
  events?: JobEventSink;
  /** What the runbooks read (registry.ts). */
  deps: NodeRegistryDeps;
}

export async function nodeKube(node: string, log: Logger): Promise<NodeKube> {
  const clients = await agentKubeApis();
  if (!clients) return { inCluster: false, deps: {} };
  // Typed as the node agent's list in src/adapters/kube/rbac.ts: another lookup would need another grant.
  const lookups: LookupsOf<'node-agent'> = new KubeLookups(clients);
  const nodeLabels = new KubeNodeLabels(lookups);
  return {
    inCluster: true,
    nodeLabels,
    events: new JobEventRecorder({ events: clients.events, instance: node, log }),
    deps: { nodeLabels, attachedVolumes: new KubeAttachedVolumes(lookups), nodePods: new KubeNodePods(lookups) },
  };
}
