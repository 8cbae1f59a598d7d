// WWIDs as multipath shows them (`36001405...`: the SCSI name-designator type as a leading digit,
// 3 = NAA, 2 = EUI-64) and as sysfs shows them (/sys/block/sdX/device/wwid: `naa.6001405...`).
// Compared in one normal form: lower-case, multipath style.

export function normalizeWwid(w: string): string {
  return w
    .trim()
    .toLowerCase()
    .replace(/^mpath-/, '');
}

/** The multipath-style WWID of a SCSI disk's sysfs `device/wwid`; null for forms we cannot map (t10). */
export function wwidOfSysfs(text: string): string | null {
  const m = /^(naa|eui)\.([0-9a-fA-F]{8,64})$/.exec(text.trim());
  if (!m?.[2]) return null;
  return `${m[1] === 'naa' ? '3' : '2'}${m[2].toLowerCase()}`;
}

/** The WWID of a multipath map from /sys/block/dm-N/dm/uuid (`mpath-<wwid>`); null for other dm devices. */
export function wwidOfDmUuid(text: string): string | null {
  const m = /^mpath-(\S+)$/.exec(text.trim());
  return m?.[1] ? m[1].toLowerCase() : null;
}

/**
 * Whether two WWIDs name the same LUN. Kubernetes-side sources (a CSI volume handle, an FC
 * `targetWWNs`/`wwids` list) often carry the NAA value without multipath's leading type digit.
 */
export function sameWwid(a: string, b: string): boolean {
  const x = normalizeWwid(a);
  const y = normalizeWwid(b);
  return x === y || x === `3${y}` || y === `3${x}`;
}

/**
 * Does a disk's sysfs WWID prove it is NOT the LUN of this map? A LUN reports several VPD page
 * 0x83 designators: sysfs `device/wwid` shows one (often NAA), multipath's WWID may come from
 * another (scsi_debug: sysfs `naa.3333...`, multipath `1Linux_scsi_debug_2000`, T10). Only two
 * identifiers of the same designator type (the leading digit) can contradict each other.
 */
export function wwidConflicts(sysfsWwid: string | null, mapWwid: string): boolean {
  if (sysfsWwid === null) return false;
  const a = normalizeWwid(sysfsWwid);
  const b = normalizeWwid(mapWwid);
  return a[0] === b[0] && a !== b;
}
