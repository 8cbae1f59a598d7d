import { idempotencyKey } from '../../core/catalogue/idempotency-keys.ts';
import { isCephName, isDiskLinkPath, isNamespace, isNodeName, isObjectName, isPodUid } from '../../core/catalogue/names.ts';
import type { LocalPvPlaceholderJob, RemediationJob } from '../../core/catalogue/jobs.ts';
import { jobEvidence } from '../../core/catalogue/evidence.ts';
import type { NodeInfo, PersistentVolumeInfo } from '../../adapters/kube/lookups.ts';
import type { LookupsOf } from '../../adapters/kube/rbac.ts';
import { outOfServiceReady } from './out-of-service.ts';
import { nodeRemediationRequested } from './node-healthcheck.ts';
import type {
  Ignored,
  LocalDeviceMissingSignal,
  LocalDeviceRestoredSignal,
  FilesystemReadonlySignal,
  NodeRecoveredSignal,
  OrphanedPodVolumesSignal,
  RbdImageBusySignal,
  Signal,
} from '../../core/signals/index.ts';
import { takesBootIdentity, withBootIdentity } from '../../core/signals/boot-identity.ts';

// Triage: signals in, jobs and reasons out. Pure but for the injected lookups. Every name is
// validated here, before it can reach a job: a value like `sdb; rm -rf /` or `../../etc` where a
// node or device name goes becomes an ignored reason, never a job.
//
// A signal from a Pod's Event is only as trustworthy as that pod's namespace, which may be any
// tenant's (src/control/sources/event-trust.ts): it becomes a job only when the cluster confirms the pod
// uses the volume the message names (pod -> its PVC -> the PV bound both ways). Without cluster
// access (KUBE_WATCH off, empty lookups) nothing confirms it, so no Pod Event makes a job:
// unknown means refuse.

export interface TriageDeps {
  /** Only the lookups src/adapters/kube/rbac.ts lists for the receiver (its role grants no more). */
  lookups: LookupsOf<'receiver'>;
  /**
   * The lookups are the API server's (KUBE_WATCH): a posted node recovery is then believed only
   * when the Node's own status agrees (corroborate below). Without cluster access nothing can
   * agree or disagree, and recoveries are taken as posted.
   */
  corroborate?: boolean;
  now?: () => number;
}

/**
 * How long after a Node's Ready transition a posted recovery of it is believed: a resolved alert
 * and kubelet's NodeReady event come within minutes of it (Alertmanager's resolve_timeout and
 * group_interval, the exporter's batching), not hours later.
 */
export const RECOVERY_CORROBORATION_MS = 60 * 60_000;

export interface TriageResult {
  jobs: RemediationJob[];
  ignored: Ignored[];
}

type One = { job: RemediationJob; ignored?: undefined } | { job?: undefined; ignored: Ignored };

export async function triage(signals: readonly Signal[], deps: TriageDeps): Promise<TriageResult> {
  const byKey = new Map<string, RemediationJob>();
  const ignored: Ignored[] = [];
  for (const signal of signals) {
    // Most signals need no lookup and are triaged synchronously: no promise per alert of a
    // 50-alert group.
    const one = triageOne(signal, deps);
    const results = one instanceof Promise ? await one : one;
    for (const r of Array.isArray(results) ? results : [results]) {
      if (r.ignored) {
        ignored.push(r.ignored);
        continue;
      }
      // The same incident twice in one payload (an exporter batch, a grouped alert) is one job
      // carrying both pieces of evidence.
      const existing = byKey.get(r.job.key);
      if (existing) {
        if (existing.evidence.length < 20) existing.evidence.push(...r.job.evidence.slice(0, 20 - existing.evidence.length));
      } else {
        byKey.set(r.job.key, r.job);
      }
    }
  }
  return { jobs: [...byKey.values()], ignored };
}

function triageOne(signal: Signal, deps: TriageDeps): Promise<One | One[]> | One {
  switch (signal.kind) {
    case 'node-recovered':
      return nodeRecovered(signal, deps);
    case 'rbd-image-busy':
      return rbdBusy(signal, deps.lookups);
    case 'local-device-missing':
      if (!signal.pod) return localDevice(signal, deps.lookups);
      return signal.pv || signal.path ? localDeviceOfPod(signal, signal.pod, deps.lookups) : localDevicesOfPod(signal, signal.pod, deps.lookups);
    case 'local-device-restored':
      return localDevice(signal, deps.lookups);
    case 'node-out-of-service-ready':
      return outOfServiceReady(signal);
    case 'node-remediation-requested':
      return nodeRemediationRequested(signal, deps.lookups);
    case 'orphaned-pod-volumes':
      return orphanJob(signal);
    case 'filesystem-readonly':
      return readonlyJob(signal);
    default: {
      const never: never = signal;
      return never;
    }
  }
}

const ignore = (signal: Signal, reason: Ignored['reason'], detail: string): One => ({
  ignored: { reason, detail, source: signal.evidence.source },
});
const quote = (v: string): string => JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}...` : v);

function nodeRecovered(signal: NodeRecoveredSignal, deps: TriageDeps): One | Promise<One> {
  if (!isNodeName(signal.node)) return ignore(signal, 'invalid-node-name', `node ${quote(signal.node)} is not a valid node name`);
  // A sender's word (an alert, an Event posted to us or read by our own watch) against the Node's
  // own status: a token holder, or anyone who may create Events in the Node's namespace (kubelet's
  // credentials on any node), must not start recoveries of nodes that did not recover (each one
  // counts towards the storm breaker). Only the Node watch's own signals (`k8s-watch`) are that status.
  const corroborate = deps.corroborate === true && signal.evidence.source !== 'k8s-watch';
  // A NodeReady event and a resolved node alert name no boot: the node's current one makes them
  // the same outage as the Rebooted event and the Node watch (src/core/signals/boot-identity.ts),
  // given here, after the Node agreed, whichever way they came.
  if (!takesBootIdentity(signal) && !corroborate) return residualJob(signal);
  // Could not ask (API server down): the recovery still becomes a job, under its own identity.
  // At worst that is a second run for one outage, which the runbook absorbs; a 5xx here would
  // hold back every other alert of the body until the API server answers.
  return deps.lookups.node(signal.node).then(
    (n) => {
      const why = corroborate ? disagreement(signal, n, (deps.now ?? Date.now)()) : undefined;
      return why ? ignore(signal, 'node-status-disagrees', why) : residualJob(withBootIdentity(signal, n?.bootId));
    },
    () => residualJob(signal),
  );
}

/** Why the Node's own status contradicts a posted recovery; undefined when it agrees or cannot tell. */
function disagreement(s: NodeRecoveredSignal, n: NodeInfo | undefined, now: number): string | undefined {
  if (!n) return `the cluster has no Node ${s.node}`;
  // kubelet's Rebooted event names the boot; it comes before Ready is True.
  if (s.bootId) return n.bootId && n.bootId !== s.bootId ? `Node ${s.node} runs boot ${n.bootId}, not the ${s.bootId} the recovery names` : undefined;
  if (n.ready !== 'True') return `Node ${s.node} is not Ready (Ready ${n.ready ?? 'not reported'})`;
  const since = n.readySince ? Date.parse(n.readySince) : Number.NaN;
  if (Number.isFinite(since) && now - since > RECOVERY_CORROBORATION_MS)
    return `Node ${s.node} has been Ready since ${n.readySince}: no recovery within the last ${RECOVERY_CORROBORATION_MS / 60_000} min`;
  return undefined;
}

/** The node agent cleans what kubelet left of the pod (and any other orphan its scan finds later). */
function orphanJob(s: OrphanedPodVolumesSignal): One {
  if (!isNodeName(s.node)) return ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`);
  if (!isPodUid(s.podUid)) return ignore(s, 'invalid-name', `pod UID ${quote(s.podUid)} is not a pod UID`);
  return {
    job: {
      runbook: 'orphaned-pod-volumes',
      version: 1,
      key: idempotencyKey('orphaned-pod-volumes', [s.node, s.podUid]),
      target: { node: s.node, podUid: s.podUid },
      evidence: [jobEvidence(s.evidence)],
    },
  };
}

/** A trigger only (NPD names no device): the node agent finds the stopped file system and its PV. */
function readonlyJob(s: FilesystemReadonlySignal): One {
  if (!isNodeName(s.node)) return ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`);
  return {
    job: {
      runbook: 'readonly-filesystem-recovery',
      version: 1,
      key: idempotencyKey('readonly-fs', [s.node, ...s.identity]),
      target: { node: s.node },
      evidence: [jobEvidence(s.evidence)],
    },
  };
}

function residualJob(s: NodeRecoveredSignal): One {
  const bootId = s.bootId && /^[A-Za-z0-9-]{1,64}$/.test(s.bootId) ? s.bootId : undefined;
  return {
    job: {
      runbook: 'residual-multipath-cleanup',
      version: 1,
      key: idempotencyKey('residual', [s.node, ...s.identity]),
      target: { node: s.node },
      ...(bootId ? { bootId } : {}),
      evidence: [jobEvidence(s.evidence)],
    },
  };
}

async function rbdBusy(s: RbdImageBusySignal, lookups: LookupsOf<'receiver'>): Promise<One> {
  if (!isCephName(s.pool) || !isCephName(s.image)) return ignore(s, 'invalid-name', `rbd image ${quote(`${s.pool}/${s.image}`)} is not a valid pool/image`);
  if (s.node !== undefined && !isNodeName(s.node)) return ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`);
  const pod = s.pod;
  if (!isNamespace(pod.namespace) || !isObjectName(pod.name))
    return ignore(s, 'invalid-name', `pod ${quote(`${pod.namespace}/${pod.name}`)} is not a valid pod name`);
  // This runbook can fence clients: an Event anyone could have written in their own namespace
  // starts it only for an image the cluster shows that pod using.
  const pvs = await podVolumes(pod, lookups);
  if (!pvs.some((pv) => pv.rbd?.pool === s.pool && pv.rbd.image === s.image)) {
    return ignore(
      s,
      'pod-volume-unconfirmed',
      `pod ${pod.namespace}/${pod.name} uses no PV backed by rbd image ${s.pool}/${s.image} that the cluster knows of${UNCONFIRMED}`,
    );
  }
  return {
    job: {
      runbook: 'rbd-stale-mapping',
      version: 1,
      key: idempotencyKey('rbd', [s.pool, s.image]),
      target: { pool: s.pool, image: s.image, ...(pod ? { pod } : {}), ...(s.node ? { node: s.node } : {}) },
      evidence: [jobEvidence(s.evidence)],
    },
  };
}

const UNCONFIRMED =
  ' (its PVC, bound to that PV, bound back to the PVC); an Event about a pod is acted on only then, and without cluster access (KUBE_WATCH) nothing confirms it';

/** The PVs the pod's claims are bound to, both ways (ClusterLookups.volumesOfPod). */
const podVolumes = (pod: { namespace: string; name: string }, lookups: LookupsOf<'receiver'>): Promise<PersistentVolumeInfo[]> => lookups.volumesOfPod(pod);

function localNames(s: LocalDeviceMissingSignal | LocalDeviceRestoredSignal): One | undefined {
  if (s.pv !== undefined && !isObjectName(s.pv)) return ignore(s, 'invalid-name', `PV name ${quote(s.pv)} is not valid`);
  if (s.node !== undefined && !isNodeName(s.node)) return ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`);
  if (s.path !== undefined && !isDiskLinkPath(s.path)) {
    return ignore(s, 'path-not-a-device-link', `path ${quote(s.path)} is not a /dev/disk/by-* link; only those can get a placeholder device`);
  }
  return undefined;
}

async function localDevice(s: LocalDeviceMissingSignal | LocalDeviceRestoredSignal, lookups: LookupsOf<'receiver'>): Promise<One> {
  const invalid = localNames(s);
  if (invalid) return invalid;
  // The PV is the authority on where a Local PV lives: its path and its node affinity.
  const pv = (s.pv ? await lookups.persistentVolume(s.pv) : undefined) ?? (s.path ? await lookups.persistentVolumeByLocalPath(s.path, s.node) : undefined);
  return localDeviceJob(s, pv);
}

/**
 * A kubelet Event naming a Local PV (or its path) for a pod: the PV must be one the pod uses. A
 * PV known to the cluster but not the pod's is as good as unknown here: the event's namespace
 * vouches for nothing else.
 */
async function localDeviceOfPod(s: LocalDeviceMissingSignal, pod: { namespace: string; name: string }, lookups: LookupsOf<'receiver'>): Promise<One> {
  const invalid = localNames(s);
  if (invalid) return invalid;
  if (!isNamespace(pod.namespace) || !isObjectName(pod.name))
    return ignore(s, 'invalid-name', `pod ${quote(`${pod.namespace}/${pod.name}`)} is not a valid pod name`);
  const pvs = await podVolumes(pod, lookups);
  const pv = s.pv ? pvs.find((v) => v.name === s.pv) : pvs.find((v) => v.local?.path === s.path);
  if (!pv) {
    const what = s.pv ? `PV ${s.pv}` : `a Local PV at ${quote(s.path ?? '')}`;
    return ignore(s, 'pod-volume-unconfirmed', `pod ${pod.namespace}/${pod.name} does not use ${what} as far as the cluster knows${UNCONFIRMED}`);
  }
  return localDeviceJob(s, pv);
}

function localDeviceJob(s: LocalDeviceMissingSignal | LocalDeviceRestoredSignal, pv: PersistentVolumeInfo | undefined): One {
  let target: LocalPvPlaceholderJob['target'];
  if (pv) {
    if (!pv.local || pv.volumeMode !== 'Block') {
      return ignore(s, 'pv-not-local-block-device', `PV ${pv.name} is not a Local PV in Block mode`);
    }
    if (!isDiskLinkPath(pv.local.path)) {
      return ignore(s, 'path-not-a-device-link', `PV ${pv.name} path ${quote(pv.local.path)} is not a /dev/disk/by-* link`);
    }
    const node = pv.local.node ?? s.node;
    if (!node) return ignore(s, 'event-names-no-node', `PV ${pv.name} has no single node in its affinity and the signal names none`);
    if (!isNodeName(node)) return ignore(s, 'invalid-node-name', `node ${quote(node)} is not a valid node name`);
    target = { node, pv: pv.name, path: pv.local.path };
  } else if (s.pv && s.path && s.node) {
    // Not known to our lookups (no cluster access configured, or not cached yet), but the sender
    // named all three: an NPD report about its own node (a Pod's Event never gets here). The
    // node agent re-checks everything on the node before it changes anything.
    target = { node: s.node, pv: s.pv, path: s.path };
  } else {
    return ignore(s, 'pv-unknown', `no PersistentVolume found for ${s.pv ? `name ${quote(s.pv)}` : `path ${quote(s.path ?? '')}`}`);
  }
  const action = s.kind === 'local-device-missing' ? 'place' : 'release';
  return {
    job: {
      runbook: 'local-pv-placeholder',
      version: 1,
      key: idempotencyKey(action === 'place' ? 'lpv' : 'lpv-release', [target.pv, target.path]),
      target,
      action,
      // A signal that the disk is back is a detector's word: the agent verifies it before releasing.
      ...(action === 'release' ? { release: { by: 'detector' as const, force: false } } : {}),
      evidence: [jobEvidence(s.evidence)],
    },
  };
}

/**
 * containerd's "not a device node" names only the pod: every Local PV in Block mode the pod uses
 * gets a placement job. That is safe because the node agent only places where the PV's path is
 * really missing; a PV whose disk is present ends as nothing-to-do.
 */
async function localDevicesOfPod(s: LocalDeviceMissingSignal, pod: { namespace: string; name: string }, lookups: LookupsOf<'receiver'>): Promise<One[]> {
  if (!isNamespace(pod.namespace) || !isObjectName(pod.name))
    return [ignore(s, 'invalid-name', `pod ${quote(`${pod.namespace}/${pod.name}`)} is not a valid pod name`)];
  if (s.node !== undefined && !isNodeName(s.node)) return [ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`)];
  const local = (await podVolumes(pod, lookups)).filter((pv) => pv.local && pv.volumeMode === 'Block');
  if (local.length === 0)
    return [ignore(s, 'pod-volume-unconfirmed', `pod ${pod.namespace}/${pod.name} uses no Local PV in Block mode that the cluster knows of${UNCONFIRMED}`)];
  return local.map((pv) => localDeviceJob({ ...s, pv: pv.name }, pv));
}
