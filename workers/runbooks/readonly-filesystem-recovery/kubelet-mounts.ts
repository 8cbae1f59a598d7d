import { posix } from 'node:path';
import { isKernelDeviceName, isObjectName, isPodUid } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import { type MountEntry, parseMountinfo } from '../../host/mountinfo.ts';

// Which mounts of a device are kubelet's, and which file systems the kernel stopped (docs/decisions/0008
// §1.3): mountinfo shows the mount's own options (`ro` when asked for: a read-only PV, pod or
// publish) apart from the super block's (`ro` on older kernels, `emergency_ro` on newer ones when
// ext4 stopped after an error). A kernel-stopped file system shows `rw` for the mount and `ro` or
// `emergency_ro` for the super block. Used by observe and by the agent's periodic scan.

type MountRole = 'staging' | 'publish';

export interface KubeletMount {
  /** mountinfo's mount id: a new mount of the same device gets a new one. */
  id: number;
  mountPoint: string;
  role: MountRole;
  mountOptions: readonly string[];
  superOptions: readonly string[];
  /** Staging: the CSI driver from `plugins/kubernetes.io/csi/<driver>/<sha256>/globalmount`. */
  driver?: string;
  /** Publish: the PV from `pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount`; staging, older kubelets: `csi/pv/<pv>/globalmount`. */
  pv?: string;
  podUid?: string;
}

/** kubelet's path shapes, relative to its root; anything else under the root is not a PV mount. */
export function kubeletMountOf(kubeletRoot: string, e: MountEntry): KubeletMount | null {
  const rel = posix.relative(kubeletRoot, e.mountPoint);
  if (rel.startsWith('..') || posix.isAbsolute(rel)) return null;
  const parts = rel.split('/');
  const base = { id: e.id, mountPoint: e.mountPoint, mountOptions: e.mountOptions, superOptions: e.superOptions };
  // plugins/kubernetes.io/csi/<driver>/<sha256>/globalmount (1.24+) or plugins/kubernetes.io/csi/pv/<pv>/globalmount
  if (parts.length === 6 && parts[0] === 'plugins' && parts[1] === 'kubernetes.io' && parts[2] === 'csi' && parts[5] === 'globalmount') {
    if (parts[3] === 'pv' && isObjectName(parts[4] ?? '')) return { ...base, role: 'staging', pv: parts[4] as string };
    return { ...base, role: 'staging', driver: parts[3] as string };
  }
  // pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount
  if (
    parts.length === 6 &&
    parts[0] === 'pods' &&
    isPodUid(parts[1] ?? '') &&
    parts[2] === 'volumes' &&
    parts[3] === 'kubernetes.io~csi' &&
    parts[5] === 'mount'
  ) {
    return { ...base, role: 'publish', podUid: parts[1] as string, ...(isObjectName(parts[4] ?? '') ? { pv: parts[4] as string } : {}) };
  }
  return null;
}

/** The kernel stopped this file system: the super block says ro or emergency_ro. */
export const superStopped = (superOptions: readonly string[]): boolean => superOptions.includes('ro') || superOptions.includes('emergency_ro');

/** Mounted read-only on request (the mount's own option): never this runbook's business. */
export const mountAskedReadOnly = (mountOptions: readonly string[]): boolean => mountOptions.includes('ro');

/** Paths whose device is the node's own, not a PV's: `/`, `/var`, kubelet's root, the container runtimes'. */
export function systemMountPoints(kubeletRoot: string): ReadonlySet<string> {
  return new Set(['/', '/var', '/var/lib', kubeletRoot, '/var/lib/containerd', '/var/lib/docker', '/var/lib/containers', '/var/lib/crio', '/var/log']);
}

/** The kernel's name of a `major:minor` (`253:3` -> `dm-3`), from /sys/dev/block; null when unknown or not one we accept. */
async function deviceOfMajorMinor(host: Host, majorMinor: string): Promise<string | null> {
  if (!/^\d+:\d+$/.test(majorMinor)) return null;
  const link = await host.readlink(`/sys/dev/block/${majorMinor}`);
  const name = link ? posix.basename(link) : null;
  return name && isKernelDeviceName(name) ? name : null;
}

export interface StoppedMount {
  device: string;
  majorMinor: string;
  mount: KubeletMount;
  /** What made it a suspect: the super options, or ext4's error count. */
  why: string;
}

/**
 * Every kubelet PV mount whose file system the kernel may have stopped, by device (the agent's
 * scan and a job without a device): the super options say ro or emergency_ro, or, since kernels
 * that stop ext4 without either (Debian 12's 6.1 measured in the lab: mount and super options stay
 * rw, writes get EROFS) show it nowhere in mountinfo, ext4's own error count is not 0. The plan
 * then asks the kernel log whether this mount was stopped.
 */
export async function findStoppedKubeletMounts(host: Host, kubeletRoot: string): Promise<StoppedMount[]> {
  const text = await host.readFile('/proc/1/mountinfo');
  if (text === null) return [];
  const out: StoppedMount[] = [];
  const errors = new Map<string, number | null>();
  for (const e of parseMountinfo(text)) {
    const m = kubeletMountOf(kubeletRoot, e);
    if (!m || mountAskedReadOnly(m.mountOptions)) continue;
    const device = await deviceOfMajorMinor(host, e.majorMinor);
    if (!device) continue;
    if (superStopped(m.superOptions)) {
      out.push({ device, majorMinor: e.majorMinor, mount: m, why: `super options ${m.superOptions.join(',')}` });
      continue;
    }
    if (e.fsType !== 'ext4') continue;
    if (!errors.has(device)) {
      const text = await host.readFile(`/sys/fs/ext4/${device}/errors_count`).catch(() => null);
      errors.set(device, text !== null && /^\d+$/.test(text.trim()) ? Number(text.trim()) : null);
    }
    const count = errors.get(device);
    if (count) out.push({ device, majorMinor: e.majorMinor, mount: m, why: `ext4 errors_count ${count}` });
  }
  return out;
}
