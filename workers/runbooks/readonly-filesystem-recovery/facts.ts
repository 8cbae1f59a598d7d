import type { MultipathPath } from '../residual-multipath-cleanup/multipath-ll.ts';
import type { ProbeFacts } from '../residual-multipath-cleanup/facts.ts';
import type { KernelFsLine } from './kernel-fs-lines.ts';
import type { KubeletMount } from './kubelet-mounts.ts';

// Everything plan() decides on, per device (docs/decisions/0008 §3.3). Plain data: unit-test
// fixtures are these objects. "Unknown" is a value of its own wherever a read can fail.

export type KernelFacts =
  | {
      ok: true;
      /** Lines of this boot about the device (the journal's boot, matched to /proc's boot id). */
      lines: KernelFsLine[];
      /** The latest `mounted filesystem` line of this boot for the device: errors before it were another mount's. */
      mountedAt: string | null;
      /** The output was cut at the host's limit (the newest lines come first, so the oldest are lost). */
      truncated: boolean;
    }
  | { ok: false; why: string };

export interface SysfsErrors {
  /** /sys/fs/ext4/<dev>/errors_count; null when absent (not ext4, or an old kernel). */
  errorsCount: number | null;
  /** /sys/fs/ext4/<dev>/last_error_time, seconds since the epoch; 0 when none. */
  lastErrorTime: number | null;
  /** /proc/fs/ext4/<dev>/options includes errors=remount-ro. */
  remountRo: boolean | null;
}

export type DeviceHealth =
  /** A dm-multipath map: its paths as `multipath -ll <map>` lists them. */
  | { kind: 'multipath'; map: string; paths: MultipathPath[] }
  /** Not a multipath map (a plain disk, LVM): only the direct read tells. */
  | { kind: 'single' }
  | { kind: 'unknown'; why: string };

/** Since when this agent has seen the device healthy (every path active, the read answering), in this boot. */
export interface HealthySighting {
  since: string;
  samples: number;
}

export interface PodFacts {
  uid: string;
  /** The pod as the API server has it now; null when no pod on the node has this uid. */
  pod: {
    namespace: string;
    name: string;
    node?: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    controller?: { kind: string; name: string };
    claims: string[];
    readOnlyClaims: string[];
  } | null;
}

export interface PvFacts {
  name: string;
  /** null when the API server has no such PV. */
  readOnly: boolean | null;
  claim?: { namespace: string; name: string };
}

export interface DeviceFacts {
  device: string;
  majorMinor: string | null;
  fsType: string | null;
  /** kubelet's mounts of the device (staging and publish), with both option lists. */
  mounts: KubeletMount[];
  /** Mount points of the device that are the node's own (`/`, `/var`, kubelet's root ...). */
  systemMounts: string[];
  /** An RBD device: the node agent cannot ask Ceph whether its client is blocklisted (§3.8). */
  rbd: boolean;
  kernel: KernelFacts;
  sysfs: SysfsErrors;
  health: DeviceHealth;
  probe: ProbeFacts;
  healthySince: HealthySighting | null;
  pods: PodFacts[];
  pvs: PvFacts[];
}

export interface ReadonlyFacts {
  node: string;
  observedAt: string;
  bootId: string | null;
  /** The Kubernetes reads (pods, PVs) were possible; without them no pod can be told apart. */
  kube: { ok: true } | { ok: false; why: string };
  devices: DeviceFacts[];
  notes: string[];
}
