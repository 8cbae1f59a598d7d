import type { ClusterLookups } from './lookups.ts';

// Every Kubernetes API call volume-medic makes, per component, in one place: deploy/charts/volume-medic/templates/rbac.yaml
// grants each component's ServiceAccount exactly its list (test/unit/repo/deploy/rbac.test.ts compares
// them, both ways, per component), and the integration tests record the calls the code really
// makes on the fake API server and check them against these lists (test/int/adapters/kube/kube-rbac.int.test.ts:
// each lookup asks exactly what LOOKUP_CALLS says; the watch and Event tests stay inside their
// component's list).
//
// The lists are tied to the code by types: each component holds its lookups as
// LookupsOf<component>, so calling a lookup that is not in COMPONENT_LOOKUPS is a compile error
// (add it here, and the RBAC test then asks for the rule in deploy/).

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'patch' | 'update' | 'delete';
/** "group/resource verb"; '' is the core group, so core calls start with "/". */
export type ApiCall = `${string}/${string} ${Verb}`;
export type Component = 'receiver' | 'cluster-worker' | 'node-agent';
export const COMPONENTS: readonly Component[] = ['receiver', 'cluster-worker', 'node-agent'];

/** The ServiceAccount each component runs as (deploy/charts/volume-medic/templates/rbac.yaml). */
export const SERVICE_ACCOUNTS: Readonly<Record<Component, string>> = {
  receiver: 'volume-medic-receiver',
  'cluster-worker': 'volume-medic-cluster-worker',
  'node-agent': 'volume-medic-node-agent',
};

/** What each lookup of KubeLookups (src/adapters/kube/api/) asks the API server, whichever client carries it. */
export const LOOKUP_CALLS: { readonly [K in keyof ClusterLookups]-?: readonly ApiCall[] } = {
  node: ['/nodes get'],
  nodesByAddress: ['/nodes list'],
  persistentVolume: ['/persistentvolumes get'],
  persistentVolumeByLocalPath: ['/persistentvolumes list'],
  claimOfVolume: ['/persistentvolumes get', '/persistentvolumeclaims get'],
  podsUsingVolume: ['/persistentvolumes get', '/persistentvolumeclaims get', '/pods list'],
  podsOnNodeUsingClaim: ['/pods list'],
  volumeAttachmentsOnNode: ['storage.k8s.io/volumeattachments list'],
  deploymentOfPod: ['/pods get', 'apps/replicasets get', 'apps/deployments get'],
  volumesOfPod: ['/pods get', '/persistentvolumeclaims get', '/persistentvolumes get'],
  persistentVolumes: ['/persistentvolumes list'],
  podsOnNode: ['/pods list'],
  allPods: ['/pods list'],
  pod: ['/pods get'],
};

/** The lookups each component's code calls (the types below make any other one a compile error). */
const COMPONENT_LOOKUPS = {
  // Triage (src/control/triage/triage.ts): a recovered node's boot id, a Local PV by name, by path, or by pod.
  receiver: ['node', 'persistentVolume', 'persistentVolumeByLocalPath', 'volumesOfPod'],
  // rbd-stale-mapping (workers/runbooks/rbd-stale-mapping/rbd-lookups.ts): the PV of an image, its
  // claim and pods, the node holding a watcher's address, the Deployment behind a pod.
  'cluster-worker': ['persistentVolumes', 'claimOfVolume', 'podsUsingVolume', 'nodesByAddress', 'deploymentOfPod'],
  // workers/node-agent/kube-*.ts: the node's labels (placeholder opt-in), its VolumeAttachments
  // and their PVs (residual-map interlock), the pods on the node (rbd-unmap's stale mounts), every
  // pod of the cluster (orphaned-pod-volumes: is a pod directory's UID a pod anywhere?), one pod
  // read fresh (readonly-filesystem-recovery's re-check before it deletes that pod).
  'node-agent': ['node', 'volumeAttachmentsOnNode', 'persistentVolume', 'podsOnNode', 'allPods', 'pod'],
} as const satisfies Record<Component, readonly (keyof ClusterLookups)[]>;

export type LookupsOf<C extends Component> = Pick<ClusterLookups, (typeof COMPONENT_LOOKUPS)[C][number]>;

/**
 * Stands for the namespace volume-medic is installed in (its pods' own, the chart's release
 * namespace): a grant there is a Role in the release namespace.
 */
const OWN_NAMESPACE = '<own>';
/** The release namespace the chart and the tests use by default (scripts/deploy/chart.ts). */
const DEFAULT_OWN_NAMESPACE = 'volume-medic';

/** A call made outside the lookups, and where. `namespace` unset: in any namespace (cluster-wide). */
export interface DirectCall {
  call: ApiCall;
  /** Only in this namespace (OWN_NAMESPACE: volume-medic's own): a Role there instead of a ClusterRole rule. */
  namespace?: string;
  usedBy: string;
}

const FLEET_LEASE = 'leader election among receivers (src/adapters/kube/lease-election.ts): only the leader exports the fleet-wide series on /metrics';

const OOS = 'out-of-service-taint-release observe and re-checks';

const RECORDS = "the jobs' VolumeRemediation records (src/control/records/record-sync.ts), kept by the Lease's leader in its own namespace";

const JOB_EVENTS = 'JobEventRecorder (src/adapters/kube/job-events.ts): job start/refusal/success/failure/wait/plan, aggregated by series';

const COORDINATION = 'coordination before a destructive step (src/adapters/kube/kube-coordination.ts)';
/** kured's DaemonSet's namespace by default (KURED_DAEMONSET): the chart's Role follows the value, named to kured's DaemonSet alone. */
const KURED_NAMESPACE = 'kube-system';

const NHC = 'NodeHealthCheck escalation (src/control/watches/node-healthcheck.ts): VolumeMedicRemediation objects become jobs';

const STEP_EVENTS = "a step's own Event (ApiKubeWrites.event, src/adapters/kube/api-kube-writes.ts), on a Pod in the Pod's namespace";

export const DIRECT_CALLS: Readonly<Record<Component, readonly DirectCall[]>> = {
  receiver: [
    { call: '/nodes list', usedBy: 'Node watch (src/control/watches/kube-watches.ts) and reconcile' },
    { call: '/nodes watch', usedBy: 'Node watch: Ready transitions and boot ids' },
    {
      call: '/events list',
      usedBy: "Event watch per reason (all namespaces: a FailedMount is in the pod's), reconcile (latest events of stuck pods)",
    },
    { call: '/events watch', usedBy: 'Event watch per reason' },
    { call: '/pods list', usedBy: 'reconcile (src/control/watches/reconcile.ts): pending pods of every namespace' },
    // Operator identity: a bearer token is checked with TokenReview and the operator's
    // verb with SubjectAccessReview. Both are create-only, cluster-scoped review objects that
    // read nothing else.
    { call: 'authentication.k8s.io/tokenreviews create', usedBy: 'operator authentication (TokenReview of a bearer token)' },
    {
      call: 'authorization.k8s.io/subjectaccessreviews create',
      usedBy: 'operator authorisation (SubjectAccessReview on a volume-medic verb)',
    },
    // One Lease in its own namespace: read, created once, renewed by the leader.
    { call: 'coordination.k8s.io/leases get', namespace: OWN_NAMESPACE, usedBy: FLEET_LEASE },
    { call: 'coordination.k8s.io/leases create', namespace: OWN_NAMESPACE, usedBy: FLEET_LEASE },
    { call: 'coordination.k8s.io/leases update', namespace: OWN_NAMESPACE, usedBy: FLEET_LEASE },
    // The console's incident page lists the Events a job wrote (src/adapters/kube/job-event-reader.ts) in
    // the API group they were written in. The same objects the core `events list` above already
    // reads (one storage behind both groups): no data the receiver could not see before.
    {
      call: 'events.k8s.io/events list',
      usedBy: "the console's incident page and `volume-medic show`: the Events a job wrote (JobEventReader)",
    },
    // volume-medic's own API group: the objects NodeHealthCheck makes (any namespace: its
    // template's), and their status subresource only, written with the job's state.
    { call: 'volume-medic.io/volumemedicremediations list', usedBy: NHC },
    { call: 'volume-medic.io/volumemedicremediations watch', usedBy: NHC },
    { call: 'volume-medic.io/volumemedicremediations/status patch', usedBy: `${NHC}; their status says the job's state` },
    // Its own records only, in its own namespace: the spec at create, the status through its
    // subresource (no update or patch of the object itself), a delete after the retention.
    { call: 'volume-medic.io/volumeremediations list', namespace: OWN_NAMESPACE, usedBy: `${RECORDS}: listed when it starts leading and every resync` },
    { call: 'volume-medic.io/volumeremediations create', namespace: OWN_NAMESPACE, usedBy: `${RECORDS}: one per job` },
    { call: 'volume-medic.io/volumeremediations delete', namespace: OWN_NAMESPACE, usedBy: `${RECORDS}: after RECORD_RETENTION_HOURS` },
    { call: 'volume-medic.io/volumeremediations/status patch', namespace: OWN_NAMESPACE, usedBy: `${RECORDS}: a merge patch of the status subresource` },
  ],
  'cluster-worker': [
    // rbd-stale-mapping's Events are on the Pod that cannot mount and on the image's claim, in their namespace: any.
    // The no-agent check's (workers/cluster-worker/no-agent-watch.ts: NoAgent, RemediationFailed) are on Nodes, in `default`.
    { call: 'events.k8s.io/events get', usedBy: JOB_EVENTS },
    { call: 'events.k8s.io/events create', usedBy: JOB_EVENTS },
    { call: 'events.k8s.io/events patch', usedBy: JOB_EVENTS },
    // The Kubernetes write port (ApiKubeWrites): a ValidatingAdmissionPolicy in the chart allows a
    // patch only when all it does is remove one node.kubernetes.io/out-of-service taint.
    { call: '/nodes patch', usedBy: 'out-of-service-taint-release: the taint removed by a JSON patch whose test ops pin it (ApiKubeWrites.patchNodeTaints)' },
    // out-of-service-taint-release (workers/runbooks/out-of-service-taint-release/reads.ts): plain GETs.
    { call: '/nodes get', usedBy: OOS },
    { call: 'coordination.k8s.io/leases get', namespace: 'kube-node-lease', usedBy: `${OOS}: the kubelet's heartbeat` },
    { call: '/events list', usedBy: `${OOS}: kubelet's Rebooted Events on the Node` },
    { call: 'storage.k8s.io/volumeattachments list', usedBy: `${OOS}: volume-attachment-left` },
    { call: '/pods list', usedBy: `${OOS}: terminating-pod-left` },
    { call: 'self-node-remediation.medik8s.io/selfnoderemediations list', usedBy: `${OOS}: another-remediator-owns-taint (404: not installed)` },
    { call: 'fence-agents-remediation.medik8s.io/fenceagentsremediations list', usedBy: `${OOS}: another-remediator-owns-taint (404: not installed)` },
    { call: 'infrastructure.cluster.x-k8s.io/metal3remediations list', usedBy: `${OOS}: another-remediator-owns-taint (404: not installed)` },
    { call: 'csiaddons.openshift.io/networkfences get', usedBy: `${OOS}: Rook's NetworkFence named after the node (cluster-scoped)` },
    // Coordination also reads the Node, its pods and the two medik8s lists above (same grants).
    { call: 'apps/daemonsets get', namespace: KURED_NAMESPACE, usedBy: `${COORDINATION}: kured's reboot lock, an annotation on its DaemonSet` },
  ],
  'node-agent': [
    // The node agent's runbooks concern Nodes and PersistentVolumes, cluster-scoped objects whose
    // Events go to `default` (as the kubelet's do): a Role there, not a ClusterRole.
    { call: 'events.k8s.io/events get', namespace: 'default', usedBy: JOB_EVENTS },
    { call: 'events.k8s.io/events create', namespace: 'default', usedBy: JOB_EVENTS },
    { call: 'events.k8s.io/events patch', namespace: 'default', usedBy: JOB_EVENTS },
    // The Kubernetes write port (ApiKubeWrites). Pods are in every namespace, so the grant is
    // cluster-wide; the chart's ValidatingAdmissionPolicies hold the delete to pods of the agent's
    // own node and its Events to reportingController volume-medic (docs/threat-model.md).
    {
      call: '/pods delete',
      usedBy: 'readonly-filesystem-recovery: a pod of its node on a read-only volume, with DeleteOptions.preconditions {uid, resourceVersion}',
    },
    { call: '/pods get', usedBy: 'readonly-filesystem-recovery: the pod read again right before its delete' },
    { call: 'events.k8s.io/events get', usedBy: STEP_EVENTS },
    { call: 'events.k8s.io/events create', usedBy: STEP_EVENTS },
    { call: 'events.k8s.io/events patch', usedBy: STEP_EVENTS },
    // The same cluster-wide grant carries local-pv-placeholder's Events on the Local PV's claim (in the claim's namespace).
    // Coordination (its node and the pods on it: the lookups' grants above).
    { call: 'apps/daemonsets get', namespace: KURED_NAMESPACE, usedBy: `${COORDINATION}: kured's reboot lock, an annotation on its DaemonSet` },
    { call: 'self-node-remediation.medik8s.io/selfnoderemediations list', usedBy: `${COORDINATION}: a SelfNodeRemediation for the node (404: not installed)` },
    {
      call: 'fence-agents-remediation.medik8s.io/fenceagentsremediations list',
      usedBy: `${COORDINATION}: a FenceAgentsRemediation for the node (404: not installed)`,
    },
  ],
};

/** Every permission a component needs, as "scope|group/resource verb", installed in `own`. */
export function permissionsOf(component: Component, own = DEFAULT_OWN_NAMESPACE): Set<string> {
  const out = new Set<string>();
  for (const lookup of COMPONENT_LOOKUPS[component]) for (const call of LOOKUP_CALLS[lookup]) out.add(`*|${call}`);
  for (const d of DIRECT_CALLS[component]) out.add(`${d.namespace === OWN_NAMESPACE ? own : (d.namespace ?? '*')}|${d.call}`);
  return out;
}

/** Is this call, in this namespace (undefined: cluster-scoped or all namespaces), in the component's list? */
export function allows(component: Component, call: ApiCall, namespace: string | undefined, own = DEFAULT_OWN_NAMESPACE): boolean {
  const p = permissionsOf(component, own);
  return p.has(`*|${call}`) || (namespace !== undefined && p.has(`${namespace}|${call}`));
}

/** The request a verb on a resource shows up as (for matching recorded API requests). */
export function verbOf(method: string, watch: boolean, named: boolean): Verb | undefined {
  if (method === 'GET') return watch ? 'watch' : named ? 'get' : 'list';
  if (method === 'POST') return 'create';
  if (method === 'PATCH') return 'patch';
  if (method === 'PUT') return 'update';
  if (method === 'DELETE') return 'delete';
  return undefined;
}
