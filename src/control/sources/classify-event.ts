import { boundedRaw, type Evidence, type SignalSource } from '../../core/catalogue/evidence.ts';
import { parseOrphanLine, type Ignored, type Signal } from '../../core/signals/index.ts';
import { distrust, type EventTrust } from './event-trust.ts';
import type { KubeEvent } from './kube-event.ts';
import {
  DISK_LINK_IN_TEXT,
  FOR_VOLUME,
  LOCAL_VOLUME_DEVICE_PV,
  LSTAT_MISSING,
  NOT_A_DEVICE_NODE,
  NPD_LOCAL_PV_MISSING,
  PATH_DOES_NOT_EXIST,
  RBD_STILL_USED,
  REBOOTED_BOOT_ID,
} from './messages.ts';

// One Kubernetes Event -> at most a few signals, or the reason it is not ours. Used by the
// webhook routes and by the Kubernetes watch, so one incident has one identity however it came.
// An Event is read only once event-trust.ts believes its reporter, object kind and namespace.

export const VOLUME_REASONS = new Set(['FailedMount', 'FailedMapVolume', 'FailedAttachVolume']);
export const CONTAINER_REASONS = new Set(['Failed', 'CreateContainerError']);
const NODE_REASONS = new Set(['NodeReady', 'Rebooted']);
/** NPD reasons (and condition types) that mean a local PV's disk is gone. */
export const LOCAL_DISK_LOST = new Set(['LocalDiskLost']);
/** NPD's kubelet monitor (deploy/integrations/npd/kubelet-orphaned-pod-monitor.json): kubelet's orphaned-pod line. */
const ORPHANED_POD_VOLUMES = 'OrphanedPodVolumes';
/** NPD kernel-monitor reasons: some file system on the node went read-only, or an XFS shut down. */
const READONLY_FS = new Set(['FilesystemIsReadOnly', 'XfsHasShutdown']);

export type Classified = { signals: Signal[]; ignored?: undefined } | { signals?: undefined; ignored: Omit<Ignored, 'index'> };

function evidence(source: SignalSource, ev: KubeEvent): Evidence {
  const obj = `${ev.involved.kind ?? '?'}/${ev.involved.namespace ? `${ev.involved.namespace}/` : ''}${ev.involved.name ?? '?'}`;
  return { source, summary: `${ev.reason} on ${obj}: ${ev.message}`.slice(0, 500), raw: boundedRaw(ev.raw) };
}

/** The event's own identity: its uid; without one, the fields that make it that event. */
function eventIdentity(ev: KubeEvent): string[] {
  return ev.uid ? ['event', ev.uid] : ['event', ev.involved.kind ?? '', ev.involved.namespace ?? '', ev.involved.name ?? '', ev.reason, ev.message];
}

export function classifyEvent(ev: KubeEvent, source: SignalSource, trust: EventTrust): Classified {
  const relevant =
    NODE_REASONS.has(ev.reason) ||
    VOLUME_REASONS.has(ev.reason) ||
    CONTAINER_REASONS.has(ev.reason) ||
    LOCAL_DISK_LOST.has(ev.reason) ||
    ev.reason === ORPHANED_POD_VOLUMES ||
    READONLY_FS.has(ev.reason);
  if (!relevant)
    return {
      ignored: { reason: 'event-reason-not-relevant', detail: `reason ${ev.reason || '(none)'} is not one volume-medic acts on`, source },
    };
  const no = distrust(ev, trust);
  if (no) return { ignored: { ...no, source } };
  if (NODE_REASONS.has(ev.reason)) return classifyNodeEvent(ev, source);
  // The node is the involved Node (distrust() made sure it is one), never source.host.
  if (LOCAL_DISK_LOST.has(ev.reason)) return classifyLocalDiskLost(ev.reason, ev.message, ev.involved.name, eventIdentity(ev), evidence(source, ev), true);
  if (ev.reason === ORPHANED_POD_VOLUMES) return classifyOrphanEvent(ev, source);
  if (READONLY_FS.has(ev.reason)) return filesystemReadonly(ev.reason, ev.involved.name, eventIdentity(ev), evidence(source, ev));
  return classifyVolumeEvent(ev, source);
}

function classifyNodeEvent(ev: KubeEvent, source: SignalSource): Classified {
  const node = ev.involved.kind === 'Node' ? ev.involved.name : undefined;
  if (!node) return { ignored: { reason: 'event-names-no-node', detail: `${ev.reason} event is not about a Node`, source } };
  if (ev.reason === 'NodeReady' && !/\bNodeReady\b/.test(ev.message) && ev.message !== '') {
    return {
      ignored: { reason: 'event-message-not-recognised', detail: `NodeReady event with message "${ev.message.slice(0, 80)}"`, source },
    };
  }
  const bootId = ev.reason === 'Rebooted' ? REBOOTED_BOOT_ID.exec(ev.message)?.[1] : undefined;
  return {
    signals: [
      {
        kind: 'node-recovered',
        version: 1,
        node,
        ...(bootId ? { bootId } : {}),
        // node + boot id is the incident itself: the Rebooted event and the Node watch agree on it.
        identity: bootId ? ['boot', node, bootId] : eventIdentity(ev),
        evidence: evidence(source, ev),
      },
    ],
  };
}

/** The line kubelet logged (NPD's message carries it); a line that names no valid pod UID is not ours. */
function classifyOrphanEvent(ev: KubeEvent, source: SignalSource): Classified {
  const node = ev.involved.name;
  if (!node) return { ignored: { reason: 'event-names-no-node', detail: `${ev.reason} event does not name its Node`, source } };
  const line = parseOrphanLine(ev.message);
  if (!line) return { ignored: { reason: 'event-message-not-recognised', detail: `${ev.reason}: no kubelet orphaned-pod line with a valid pod UID`, source } };
  return {
    signals: [
      // A pod UID never repeats: the node and the UID are the incident, however often kubelet says it.
      { kind: 'orphaned-pod-volumes', version: 1, node, podUid: line.uid, identity: ['orphan', node, line.uid], evidence: evidence(source, ev) },
    ],
  };
}

function classifyVolumeEvent(ev: KubeEvent, source: SignalSource): Classified {
  // Every signal of a Pod Event names its pod: triage acts on it only once the pod is confirmed
  // to use the volume the message names.
  const pod = ev.involved.name && ev.involved.namespace ? { namespace: ev.involved.namespace, name: ev.involved.name } : undefined;
  if (!pod) return { ignored: { reason: 'invalid-name', detail: `${ev.reason} about a Pod without a name`, source } };
  const rbd = RBD_STILL_USED.exec(ev.message);
  if (rbd && VOLUME_REASONS.has(ev.reason)) {
    const parts = rbd[1]!.split('/');
    if (parts.length !== 2) {
      return {
        ignored: {
          reason: 'invalid-name',
          detail: `rbd image "${rbd[1]}" is not <pool>/<image> (RBD namespaces are not supported)`,
          source,
        },
      };
    }
    const [pool, image] = parts as [string, string];
    return {
      signals: [
        {
          kind: 'rbd-image-busy',
          version: 1,
          pool,
          image,
          pod,
          ...(ev.host ? { node: ev.host } : {}),
          identity: ['rbd', pool, image],
          evidence: evidence(source, ev),
        },
      ],
    };
  }
  if (CONTAINER_REASONS.has(ev.reason) && NOT_A_DEVICE_NODE.test(ev.message)) {
    const pvFromDevice = LOCAL_VOLUME_DEVICE_PV.exec(ev.message)?.[1];
    const path = DISK_LINK_IN_TEXT.exec(ev.message)?.[1];
    if (pvFromDevice || path) return localMissing(ev, source, pod, pvFromDevice, path);
    // containerd names neither the PV nor the device: only the pod. Triage asks the cluster for
    // the pod's Local PVs. A path that is not a local-volume device (a CSI volume) is not ours.
    if (!/\/volumeDevices\//.test(ev.message)) return localMissing(ev, source, pod, undefined, undefined);
    return {
      ignored: { reason: 'event-message-not-recognised', detail: '"not a device node" for a volume that is not a local PV', source },
    };
  }
  if (ev.reason === 'FailedMapVolume' || ev.reason === 'FailedMount') {
    const path = LSTAT_MISSING.exec(ev.message)?.[1] ?? PATH_DOES_NOT_EXIST.exec(ev.message)?.[1];
    if (path) return localMissing(ev, source, pod, FOR_VOLUME.exec(ev.message)?.[1], path);
  }
  return { ignored: { reason: 'event-message-not-recognised', detail: `${ev.reason}: message matches no known storage failure`, source } };
}

function localMissing(
  ev: KubeEvent,
  source: SignalSource,
  pod: { namespace: string; name: string },
  pv: string | undefined,
  path: string | undefined,
): Classified {
  return {
    signals: [
      {
        kind: 'local-device-missing',
        version: 1,
        ...(pv ? { pv } : {}),
        ...(path ? { path } : {}),
        pod,
        ...(ev.host ? { node: ev.host } : {}),
        identity: eventIdentity(ev),
        evidence: evidence(source, ev),
      },
    ],
  };
}

/**
 * NPD's LocalDiskLost (as an Event or a node condition). Its message lists the PVs and paths the
 * check script found missing; `present` entries (condition back to False) mean restored.
 */
export function classifyLocalDiskLost(what: string, message: string, node: string | undefined, identity: string[], ev: Evidence, lost: boolean): Classified {
  if (!node) return { ignored: { reason: 'event-names-no-node', detail: `${what} does not name its node`, source: ev.source } };
  const signals: Signal[] = [];
  for (const m of message.matchAll(NPD_LOCAL_PV_MISSING)) {
    const [, pv, path, state] = m as unknown as [string, string, string, string];
    const kind = state === 'missing' && lost ? 'local-device-missing' : 'local-device-restored';
    signals.push({ kind, version: 1, pv, path, node, identity: [...identity, pv, path], evidence: ev });
  }
  if (signals.length > 0) return { signals };
  const path = DISK_LINK_IN_TEXT.exec(message)?.[1];
  if (path) {
    return {
      signals: [
        {
          kind: lost ? 'local-device-missing' : 'local-device-restored',
          version: 1,
          path,
          node,
          identity: [...identity, path],
          evidence: ev,
        },
      ],
    };
  }
  if (!lost) return { ignored: { reason: 'restore-names-no-device', detail: `${what} cleared without naming a device`, source: ev.source } };
  return { ignored: { reason: 'event-message-not-recognised', detail: `${what} names no local PV or /dev/disk path`, source: ev.source } };
}

/** NPD's read-only file system or XFS shutdown, as an Event or a condition: a trigger naming its node only. */
export function filesystemReadonly(what: string, node: string | undefined, identity: string[], ev: Evidence): Classified {
  if (!node) return { ignored: { reason: 'event-names-no-node', detail: `${what} does not name its node`, source: ev.source } };
  return { signals: [{ kind: 'filesystem-readonly', version: 1, node, identity, evidence: ev }] };
}
