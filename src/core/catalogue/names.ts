import { z } from '../zod.ts';

// Every name that reaches a path, an argv or a queue name is checked here first (device and
// node names from input are validated before use). Patterns are deliberately strict: a
// value that does not match is refused, never escaped or "cleaned".

/** RFC 1123 subdomain, as Kubernetes requires for Node and PV names. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** RFC 1123 label (namespaces). */
const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Ceph pool and RBD image names: Ceph allows more, but nothing we will ever pass to argv needs more. */
const CEPH_NAME = /^(?=.{1,128}$)[A-Za-z0-9][A-Za-z0-9._-]*$/;
/**
 * A Ceph client address as `rados listwatchers` / `rbd status` print a watcher and as `ceph osd
 * blocklist add` takes it: `<IPv4>:<port>/<nonce>` or `[<IPv6>]:<port>/<nonce>` (nonce: u32).
 */
const CEPH_CLIENT_ADDRESS =
  /^(?:(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}|\[[0-9a-fA-F:.]{2,45}\]):[0-9]{1,5}\/[0-9]{1,10}$/;
/** A /dev/disk/by-id (or by-path/by-uuid) link, the only device paths a Local PV may name for us. */
const DISK_LINK_PATH = /^\/dev\/disk\/by-(id|path|uuid|partuuid)\/[A-Za-z0-9:._+@-]{1,200}$/;
/**
 * A device-mapper multipath map name as it reaches argv (`multipath -f <map>`, `dmsetup message
 * <map> ...`): a user_friendly_names alias (mpatha), a WWID (3600a0b8..., eui.*, SATA_...), or a
 * configured alias. Device-mapper allows nearly anything but `/`; we take letters, digits and
 * `_ . : -`, up to 128, never a leading `-` (an option to multipath/dmsetup) or `.`.
 */
const MAP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;
/** Kernel block device names we act on. */
export const DEVICE_PATTERNS = {
  scsi: /^sd[a-z]{1,4}$/,
  dm: /^dm-[0-9]{1,6}$/,
  rbd: /^rbd[0-9]{1,6}$/,
  loop: /^loop[0-9]{1,7}$/,
} as const;

export const isNodeName = (v: string): boolean => DNS_SUBDOMAIN.test(v);
export const isNamespace = (v: string): boolean => DNS_LABEL.test(v);
export const isObjectName = (v: string): boolean => DNS_SUBDOMAIN.test(v);
export const isCephName = (v: string): boolean => CEPH_NAME.test(v) && !v.includes('..');
export const isMapName = (v: string): boolean => MAP_NAME.test(v);
export const isCephClientAddress = (v: string): boolean => CEPH_CLIENT_ADDRESS.test(v);
export const isDiskLinkPath = (v: string): boolean => DISK_LINK_PATH.test(v) && !v.includes('/../') && !v.endsWith('/..');
/** A pod's metadata.uid as kubelet names its directory under `<root>/pods/`: the UID becomes a path component, so nothing else may pass. */
const POD_UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A kernel block device name as the kernel log and /sys/block name a file system's device. */
const KERNEL_DEVICE_NAME = /^(dm-[0-9]{1,5}|sd[a-z]{1,4}|nvme[0-9]{1,3}n[0-9]{1,3}(p[0-9]{1,3})?|rbd[0-9]{1,5}|vd[a-z]{1,4})$/;
/** A boot id as /proc/sys/kernel/random/boot_id and Node.status.nodeInfo.bootID give it. */
const BOOT_ID = /^[A-Za-z0-9-]{1,64}$/;
export const isPodUid = (v: string): boolean => POD_UID.test(v);
export const isKernelDeviceName = (v: string): boolean => KERNEL_DEVICE_NAME.test(v);
export const isDeviceName = (v: string): boolean => Object.values(DEVICE_PATTERNS).some((p) => p.test(v));

export const NodeName = z.string().check(z.refine(isNodeName, { message: 'not a valid Kubernetes node name (RFC 1123 subdomain)' }));
export const Namespace = z.string().check(z.refine(isNamespace, { message: 'not a valid namespace (RFC 1123 label)' }));
export const ObjectName = z.string().check(z.refine(isObjectName, { message: 'not a valid object name (RFC 1123 subdomain)' }));
export const CephName = z.string().check(z.refine(isCephName, { message: 'not a valid Ceph pool or image name' }));
export const CephClientAddress = z.string().check(z.refine(isCephClientAddress, { message: 'not a Ceph client address (<ip>:<port>/<nonce>)' }));
export const PodUid = z.string().check(z.refine(isPodUid, { message: 'not a pod UID (lower-case RFC 4122 form)' }));
export const KernelDeviceName = z.string().check(z.refine(isKernelDeviceName, { message: 'not a kernel block device name (dm-N, sdX, nvmeNnN, rbdN, vdX)' }));
export const BootId = z.string().check(z.regex(BOOT_ID, 'not a boot id'));
export const DiskLinkPath = z.string().check(z.refine(isDiskLinkPath, { message: 'not a /dev/disk/by-* device link' }));

/** How volume-medic names itself on the Kubernetes Events it writes (reportingController, source.component): the watch skips its own. */
export const REPORTING_CONTROLLER = 'volume-medic';
