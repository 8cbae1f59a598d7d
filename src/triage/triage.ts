import { idempotencyKey } from '../catalogue/keys.ts';
import { isCephName, isDiskLinkPath, isNamespace, isNodeName, isObjectName } from '../catalogue/names.ts';
import type { LocalPvPlaceholderJob, RemediationJob } from '../catalogue/jobs.ts';
import type { LookupsOf } from '../kube/rbac.ts';
import type {
  Ignored, LocalDeviceMissingSignal, LocalDeviceRestoredSignal, NodeRecoveredSignal, RbdImageBusySignal, Signal,
} from '../signals/index.ts';
import { withBootIdentity } from '../signals/boot-identity.ts';

// Triage: signals in, jobs and reasons out. Pure but for the injected lookups. Every name is
// validated here, before it can reach a job: a value like `sdb; rm -rf /` or `../../etc` where a
// node or device name goes becomes an ignored reason, never a job.

export interface TriageDeps {
  /** Only the lookups src/kube/rbac.ts lists for the receiver (its role grants no more). */
  lookups: LookupsOf<'receiver'>;
}

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
    // 50-alert group (issue 8).
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
      return nodeRecovered(signal, deps.lookups);
    case 'rbd-image-busy':
      return rbdBusy(signal);
    case 'local-device-missing':
      return signal.pv || signal.path || !signal.pod ? localDevice(signal, deps.lookups) : localDevicesOfPod(signal, signal.pod, deps.lookups);
    case 'local-device-restored':
      return localDevice(signal, deps.lookups);
    default: {
      const never: never = signal;
      return never;
    }
  }
}

const ignore = (signal: Signal, reason: Ignored['reason'], detail: string): One => ({ ignored: { reason, detail, source: signal.evidence.source } });
const quote = (v: string): string => JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}...` : v);

function nodeRecovered(signal: NodeRecoveredSignal, lookups: LookupsOf<'receiver'>): One | Promise<One> {
  if (!isNodeName(signal.node)) return ignore(signal, 'invalid-node-name', `node ${quote(signal.node)} is not a valid node name`);
  // A NodeReady event names no boot: the node's current one makes it the same incident as the
  // Rebooted event and the Node watch (the watch path has done this already; then it is a no-op).
  if (signal.bootId || signal.identity[0] !== 'event') return residualJob(signal);
  return lookups.node(signal.node).then((n) => residualJob(withBootIdentity(signal, n?.bootId)));
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
      evidence: [s.evidence],
    },
  };
}

function rbdBusy(s: RbdImageBusySignal): One {
  if (!isCephName(s.pool) || !isCephName(s.image)) return ignore(s, 'invalid-name', `rbd image ${quote(`${s.pool}/${s.image}`)} is not a valid pool/image`);
  if (s.node !== undefined && !isNodeName(s.node)) return ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`);
  const pod = s.pod && isNamespace(s.pod.namespace) && isObjectName(s.pod.name) ? s.pod : undefined;
  return {
    job: {
      runbook: 'rbd-stale-mapping',
      version: 1,
      key: idempotencyKey('rbd', [s.pool, s.image]),
      target: { pool: s.pool, image: s.image, ...(pod ? { pod } : {}), ...(s.node ? { node: s.node } : {}) },
      evidence: [s.evidence],
    },
  };
}

async function localDevice(s: LocalDeviceMissingSignal | LocalDeviceRestoredSignal, lookups: LookupsOf<'receiver'>): Promise<One> {
  if (s.pv !== undefined && !isObjectName(s.pv)) return ignore(s, 'invalid-name', `PV name ${quote(s.pv)} is not valid`);
  if (s.node !== undefined && !isNodeName(s.node)) return ignore(s, 'invalid-node-name', `node ${quote(s.node)} is not a valid node name`);
  if (s.path !== undefined && !isDiskLinkPath(s.path)) {
    return ignore(s, 'path-not-a-device-link', `path ${quote(s.path)} is not a /dev/disk/by-* link; only those can get a placeholder device`);
  }
  // The PV is the authority on where a Local PV lives: its path and its node affinity.
  const pv = (s.pv ? await lookups.persistentVolume(s.pv) : undefined)
    ?? (s.path ? await lookups.persistentVolumeByLocalPath(s.path, s.node) : undefined);
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
    // named all three. The node agent re-checks everything on the node before it changes anything.
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
      evidence: [s.evidence],
    },
  };
}

/**
 * containerd's "not a device node" names only the pod: every Local PV in Block mode the pod uses
 * gets a placement job. That is safe because the node agent only places where the PV's path is
 * really missing; a PV whose disk is present ends as nothing-to-do.
 */
async function localDevicesOfPod(s: LocalDeviceMissingSignal, pod: { namespace: string; name: string }, lookups: LookupsOf<'receiver'>): Promise<One[]> {
  if (!isNamespace(pod.namespace) || !isObjectName(pod.name)) return [ignore(s, 'invalid-name', `pod ${quote(`${pod.namespace}/${pod.name}`)} is not a valid pod name`)];
  const local = (await lookups.volumesOfPod(pod)).filter((pv) => pv.local && pv.volumeMode === 'Block');
  if (local.length === 0) return [ignore(s, 'pv-unknown', `pod ${pod.namespace}/${pod.name} uses no Local PV in Block mode that the cluster knows of`)];
  return Promise.all(local.map((pv) => localDevice({ ...s, pv: pv.name }, lookups)));
}
