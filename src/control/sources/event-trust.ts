import type { IgnoreReason } from '../../core/signals/index.ts';
import { DEFAULT_NPD_EVENT_SOURCES } from '../../core/config/sections/receiver-sources.ts';
import type { KubeEvent } from './kube-event.ts';

// Which Events are believed, before their message is read . Anyone who
// may create Events in a namespace can write any reason, message, reporter and involved object
// there: the API server checks none of them against who really sent it. What it does enforce is
// RBAC on the Event's own namespace, and that a namespaced involved object lies in that
// namespace. So an Event is believed only when all of these hold:
//
// - its reason is one a known reporter writes, and every reporter field names that reporter
//   (kubelet; the attach/detach controller; one of the configured NPD monitors);
// - its involved object is the kind that reporter writes it about (Pod for volume and container
//   failures, Node for node recovery and LocalDiskLost);
// - it lives where that reporter writes it: a Node's Event in `default` (kubelet, and NPD unless
//   run with --event-namespace), a Pod's Event in the pod's own namespace.
//
// The reporter fields alone prove nothing (they are free text); they keep other controllers'
// Events with a reused reason out. A Pod's namespace is any tenant's, so a Pod Event is only
// acted on once triage confirms the pod really uses the volume the message names (triage.ts).

/** kubelet: volume mount/map failures, container start failures, node status and reboots. */
const KUBELET = 'kubelet';
/** kube-controller-manager's attach/detach controller: FailedAttachVolume. */
const ATTACH_DETACH_CONTROLLER = 'attachdetach-controller';
/**
 * NPD's stock kmsg monitors (v0.8.20, NPD's image runs both): `config/kernel-monitor.json` writes
 * XfsHasShutdown (and, in its DaemonSet's ConfigMap, FilesystemIsReadOnly); `config/readonly-monitor.json`
 * writes FilesystemIsReadOnly. Captured: test/fixtures/npd/captured/.
 */
const NPD_KERNEL_MONITORS = ['kernel-monitor', 'readonly-monitor'] as const;
/** Where the event recorder of client-go puts an Event about a cluster-scoped object (a Node). */
const KUBELET_NODE_EVENT_NAMESPACE = 'default';

export interface EventTrust {
  /**
   * NPD problem daemons whose LocalDiskLost Events are believed. NPD reports a monitor's Events
   * with `source.component` = the monitor config's `source` (e.g. `kernel-monitor`, or a custom
   * plugin monitor's own name) and `source.host` = the node.
   */
  npdSources: ReadonlySet<string>;
  /** The namespace NPD writes its Events in: its --event-namespace flag, `default` when unset. */
  npdNamespace: string;
}

export const DEFAULT_EVENT_TRUST: EventTrust = { npdSources: new Set(DEFAULT_NPD_EVENT_SOURCES), npdNamespace: 'default' };

type Expectation = { kind: 'Pod' | 'Node'; reporters: ReadonlySet<string>; who: string };

const FROM_KUBELET = new Set([KUBELET]);
const READONLY_REASONS = new Set(['FilesystemIsReadOnly', 'XfsHasShutdown']);
const FROM_ATTACH_DETACH = new Set([ATTACH_DETACH_CONTROLLER]);

function expectation(reason: string, trust: EventTrust): Expectation | undefined {
  switch (reason) {
    case 'FailedMount':
    case 'FailedMapVolume':
    case 'Failed':
    case 'CreateContainerError':
      return { kind: 'Pod', reporters: FROM_KUBELET, who: 'kubelet' };
    case 'FailedAttachVolume':
      return { kind: 'Pod', reporters: FROM_ATTACH_DETACH, who: 'the attach/detach controller' };
    case 'NodeReady':
    case 'Rebooted':
      return { kind: 'Node', reporters: FROM_KUBELET, who: 'kubelet' };
    case 'LocalDiskLost':
    case 'OrphanedPodVolumes':
      return { kind: 'Node', reporters: trust.npdSources, who: 'node-problem-detector (NPD_EVENT_SOURCES)' };
    case 'FilesystemIsReadOnly':
    case 'XfsHasShutdown':
      // NPD's own kmsg monitors write these (sources kernel-monitor, readonly-monitor).
      // A forged one makes a job without a device: the node agent then finds no stopped file system.
      return {
        kind: 'Node',
        reporters: new Set([...trust.npdSources, ...NPD_KERNEL_MONITORS]),
        who: 'node-problem-detector (kernel-monitor, readonly-monitor, NPD_EVENT_SOURCES)',
      };
    default:
      return undefined;
  }
}

export interface Distrust {
  reason: IgnoreReason;
  detail: string;
}

const q = (v: string | undefined): string => (v === undefined ? '(none)' : JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}...` : v));

/**
 * Why this Event is not believed, or undefined when it is. Only for the reasons classifyEvent acts
 * on; any other reason is not ours anyway.
 */
export function distrust(ev: KubeEvent, trust: EventTrust): Distrust | undefined {
  const want = expectation(ev.reason, trust);
  if (!want) return undefined;
  if (ev.involved.kind !== want.kind) {
    return {
      reason: 'event-wrong-object-kind',
      detail: `${ev.reason} is about a ${want.kind}; this one is about kind ${q(ev.involved.kind)}`,
    };
  }
  if (ev.reporters.length === 0) {
    return { reason: 'event-reporter-not-trusted', detail: `${ev.reason} names no reporter; only ${want.who} is believed` };
  }
  const stranger = ev.reporters.find((r) => !want.reporters.has(r));
  if (stranger !== undefined) {
    return { reason: 'event-reporter-not-trusted', detail: `${ev.reason} reported by ${q(stranger)}; only ${want.who} is believed` };
  }
  if (want.kind === 'Node') {
    const home =
      ev.reason === 'LocalDiskLost' || ev.reason === 'OrphanedPodVolumes' || READONLY_REASONS.has(ev.reason)
        ? trust.npdNamespace
        : KUBELET_NODE_EVENT_NAMESPACE;
    if (ev.namespace !== home) {
      return {
        reason: 'event-namespace-not-trusted',
        detail: `${ev.reason} about Node ${q(ev.involved.name)} lives in namespace ${q(ev.namespace)}; ${want.who} writes it in ${q(home)}`,
      };
    }
    return undefined;
  }
  // A Pod: kubelet and the attach/detach controller write its Events in its own namespace (and
  // the API server refuses a legacy Event whose namespace differs from its object's).
  if (ev.namespace === undefined || ev.namespace !== ev.involved.namespace) {
    return {
      reason: 'event-namespace-not-trusted',
      detail: `${ev.reason} about Pod ${q(ev.involved.namespace)}/${q(ev.involved.name)} lives in namespace ${q(ev.namespace)}, not the pod's`,
    };
  }
  return undefined;
}
