import { z } from '../../../src/core/zod.ts';
import type { NetworkFenceFact, NodeState, Read, RemediatorFact, RemediatorKind } from './facts.ts';
import { OUT_OF_SERVICE_TAINT } from './facts.ts';

// The API reads of out-of-service-taint-release (docs/decisions/0008 §4.2), on one GET: the
// answers are parsed here, not trusted. A 404 of a remediator's or Rook's list is "not installed"
// (none), a 403 or any other failure is "cannot tell". Paths and verbs are the cluster worker's
// rows in src/adapters/kube/rbac.ts.

/** GET of an API path; rejects with an error whose `code` is the HTTP status (KubeRest, client-node). */
export type KubeGet = (path: string, query?: Record<string, string>) => Promise<unknown>;

const codeOf = (err: unknown): number | undefined => {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
};
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A read that may fail: its failure is data (`missing`), never an exception past observe. */
export async function read<T>(f: () => Promise<T>): Promise<Read<T>> {
  try {
    return { ok: true, value: await f() };
  } catch (err) {
    return { ok: false, error: message(err) };
  }
}

const Meta = z.object({
  name: z.string(),
  namespace: z.optional(z.string()),
  resourceVersion: z.optional(z.string()),
  labels: z.optional(z.record(z.string(), z.string())),
  annotations: z.optional(z.record(z.string(), z.string())),
  deletionTimestamp: z.optional(z.nullable(z.string())),
});
// The API server omits unset fields; a null is read as unset too, so the `test` op's object is the one it stores.
const TaintSpec = z.object({ key: z.string(), value: z.optional(z.nullable(z.string())), effect: z.string(), timeAdded: z.optional(z.nullable(z.string())) });
const NodeObject = z.object({
  metadata: z.extend(Meta, { resourceVersion: z.string() }),
  spec: z.optional(z.object({ taints: z.optional(z.nullable(z.array(TaintSpec))) })),
  status: z.optional(
    z.object({
      nodeInfo: z.optional(z.object({ bootID: z.optional(z.string()) })),
      conditions: z.optional(z.array(z.object({ type: z.string(), status: z.string(), lastTransitionTime: z.optional(z.string()) }))),
      addresses: z.optional(z.array(z.object({ type: z.string(), address: z.string() }))),
    }),
  ),
});
const List = <T extends z.ZodMiniType>(item: T) => z.object({ items: z.array(item) });
const Named = z.object({ metadata: Meta });

const seg = encodeURIComponent;

/** The Node as spec.taints holds it (the taint objects exactly as listed: the patch's `test` compares them). */
export async function readNode(get: KubeGet, node: string): Promise<NodeState | undefined> {
  let raw: unknown;
  try {
    raw = await get(`/api/v1/nodes/${seg(node)}`);
  } catch (err) {
    if (codeOf(err) === 404) return undefined;
    throw err;
  }
  const n = NodeObject.parse(raw);
  const taints = (n.spec?.taints ?? []).map((t) => ({
    key: t.key,
    ...(t.value !== undefined && t.value !== null ? { value: t.value } : {}),
    effect: t.effect,
    ...(t.timeAdded !== undefined && t.timeAdded !== null ? { timeAdded: t.timeAdded } : {}),
  }));
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    resourceVersion: n.metadata.resourceVersion,
    taints,
    oosIndex: taints.findIndex((t) => t.key === OUT_OF_SERVICE_TAINT),
    ...(n.status?.nodeInfo?.bootID ? { bootId: n.status.nodeInfo.bootID } : {}),
    ...(ready ? { ready: ready.status } : {}),
    ...(ready?.lastTransitionTime ? { readySince: ready.lastTransitionTime } : {}),
    labels: n.metadata.labels ?? {},
    addresses: (n.status?.addresses ?? []).map((a) => a.address),
  };
}

const Lease = z.object({ spec: z.optional(z.object({ renewTime: z.optional(z.nullable(z.string())) })) });

export async function readLeaseRenewTime(get: KubeGet, node: string): Promise<string | undefined> {
  try {
    const l = Lease.parse(await get(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${seg(node)}`));
    return l.spec?.renewTime ?? undefined;
  } catch (err) {
    if (codeOf(err) === 404) return undefined;
    throw err;
  }
}

const CoreEvent = z.object({
  message: z.optional(z.string()),
  lastTimestamp: z.optional(z.nullable(z.string())),
  eventTime: z.optional(z.nullable(z.string())),
  firstTimestamp: z.optional(z.nullable(z.string())),
});

/** kubelet's `Rebooted` Events on the Node: "Node <n> has been rebooted, boot id: <id>". */
export async function readRebooted(get: KubeGet, node: string): Promise<{ at: string; bootId?: string }[]> {
  const fieldSelector = `involvedObject.kind=Node,involvedObject.name=${node},reason=Rebooted`;
  const list = List(CoreEvent).parse(await get('/api/v1/events', { fieldSelector }));
  return list.items.flatMap((e) => {
    const at = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp;
    const boot = /boot id: ([A-Za-z0-9-]+)/.exec(e.message ?? '')?.[1];
    return at ? [{ at, ...(boot ? { bootId: boot } : {}) }] : [];
  });
}

const Attachment = z.object({ metadata: Meta, spec: z.object({ nodeName: z.string() }) });

export async function readAttachments(get: KubeGet, node: string): Promise<string[]> {
  const list = List(Attachment).parse(await get('/apis/storage.k8s.io/v1/volumeattachments'));
  return list.items.filter((a) => a.spec.nodeName === node).map((a) => a.metadata.name);
}

export async function readTerminatingPods(get: KubeGet, node: string): Promise<string[]> {
  const list = List(Named).parse(await get('/api/v1/pods', { fieldSelector: `spec.nodeName=${node}` }));
  return list.items.filter((p) => p.metadata.deletionTimestamp).map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name}`);
}

/** Where each remediator's objects are listed, and whether one names the node by itself. */
const REMEDIATORS: readonly { kind: RemediatorKind; path: string; namesNode: boolean }[] = [
  { kind: 'SelfNodeRemediation', path: '/apis/self-node-remediation.medik8s.io/v1alpha1/selfnoderemediations', namesNode: true },
  { kind: 'FenceAgentsRemediation', path: '/apis/fence-agents-remediation.medik8s.io/v1alpha1/fenceagentsremediations', namesNode: true },
  // Named after the Machine, not the node: which node it power-cycles is not resolved here, so any
  // one of them holds every taint release until it is gone.
  { kind: 'Metal3Remediation', path: '/apis/infrastructure.cluster.x-k8s.io/v1beta1/metal3remediations', namesNode: false },
];

/** NodeHealthCheck's remediation objects carry the node in this annotation when their name is not it. */
const NODE_NAME_ANNOTATION = 'remediation.medik8s.io/node-name';

export async function readRemediators(get: KubeGet, node: string): Promise<RemediatorFact[]> {
  return Promise.all(
    REMEDIATORS.map(async ({ kind, path, namesNode }): Promise<RemediatorFact> => {
      try {
        const list = List(Named).parse(await get(path));
        const mine = list.items.filter((o) => !namesNode || o.metadata.name === node || o.metadata.annotations?.[NODE_NAME_ANNOTATION] === node);
        return { kind, state: 'listed', names: mine.map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`) };
      } catch (err) {
        if (codeOf(err) === 404) return { kind, state: 'absent-crd', names: [] };
        return { kind, state: 'unknown', error: message(err) };
      }
    }),
  );
}

const Fence = z.object({ spec: z.optional(z.object({ fenceState: z.optional(z.string()), cidrs: z.optional(z.array(z.string())) })) });

/** Rook's NetworkFence for the node (cluster-scoped, named after it); 404 (no such object or no CRD): none. */
export async function readNetworkFence(get: KubeGet, node: string): Promise<NetworkFenceFact> {
  try {
    const f = Fence.parse(await get(`/apis/csiaddons.openshift.io/v1alpha1/networkfences/${seg(node)}`));
    return { state: 'present', ...(f.spec?.fenceState ? { fenceState: f.spec.fenceState } : {}), cidrs: f.spec?.cidrs ?? [] };
  } catch (err) {
    if (codeOf(err) === 404) return { state: 'none' };
    return { state: 'unknown', error: message(err) };
  }
}
