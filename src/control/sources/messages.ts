// The strings kubelet, ceph-csi and the in-tree plugins really write, as regular expressions.
// Each has captured examples and near-miss twins in test/fixtures; change one only with a fixture.

/** in-tree rbd: `rbd image kube/kubernetes-dynamic-pvc-... is still being used`;
 *  ceph-csi: `rpc error: code = Internal desc = rbd image replicapool/csi-vol-... is still being used`. */
export const RBD_STILL_USED = /\brbd image (\S+) is still being used\b/;

/** containerd/CRI-O refusing a block device that is a plain file or a dangling link. */
export const NOT_A_DEVICE_NODE = /\bnot a device node\b/;

/** The pod's block-volume link names the PV: .../volumeDevices/kubernetes.io~local-volume/<pv>. */
export const LOCAL_VOLUME_DEVICE_PV = /kubernetes\.io~local-volume\/(?:volumeDevices\/)?([a-z0-9][a-z0-9.-]*)/;

/** `MapVolume.EvalHostSymlinks failed for volume "local-pv-1" : lstat /dev/disk/by-id/wwn-...: no such file or directory` */
export const LSTAT_MISSING = /\blstat (\/\S+?): no such file or directory/;

/** `MountVolume.NewMounter initialization failed for volume "local-pv-1" : path "/dev/..." does not exist` */
export const PATH_DOES_NOT_EXIST = /\bpath "([^"]+)" does not exist/;

/** `... failed for volume "local-pv-1" ...` */
export const FOR_VOLUME = /\bfor volume "([^"]+)"/;

/** kubelet: `Node worker-1 has been rebooted, boot id: 0b9c5e06-...` */
export const REBOOTED_BOOT_ID = /\bboot id: ([A-Za-z0-9-]+)/;

/** NPD LocalDiskLost (our check script, deploy/npd): `local PV <pv>: <path> is missing`, several joined by `; `. */
export const NPD_LOCAL_PV_MISSING = /\blocal PV ([a-z0-9][a-z0-9.-]*): (\/dev\/\S+?) is (missing|present)/g;

/** Any /dev/disk/by-* path mentioned in free text. */
export const DISK_LINK_IN_TEXT = /(\/dev\/disk\/by-[a-z]+\/[A-Za-z0-9:._+@-]+)/;
