// A disk's World Wide Name in the forms the kernel and udev show it, reduced to lower-case hex
// so they can be compared: by-id `wwn-0x5000c500a1b2c3d4` / `scsi-35000c500a1b2c3d4`, sysfs
// `naa.5000c500a1b2c3d4`, a multipath map's `mpath-35000c500a1b2c3d4`. Anything else is null:
// a WWN we cannot read is never guessed.

const HEX = '([0-9a-fA-F]{8,64})';
const LINK_FORMS = [new RegExp(`^wwn-0x${HEX}$`), new RegExp(`^scsi-3${HEX}$`), new RegExp(`^nvme-eui\\.${HEX}$`)];

/** The WWN a /dev/disk/by-id link name stands for; partition links name their disk's WWN. */
export function wwnOfLinkName(name: string): string | null {
  const disk = name.replace(/-part[0-9]+$/, '');
  for (const form of LINK_FORMS) {
    const m = form.exec(disk);
    if (m?.[1]) return m[1].toLowerCase();
  }
  return null;
}

/** The WWN in /sys/block/<disk>/device/wwid (SCSI) or /sys/block/<nvme>/wwid. */
export function wwnOfWwid(text: string): string | null {
  const m = new RegExp(`^(?:naa|eui)\\.${HEX}$`).exec(text.trim());
  return m?.[1] ? m[1].toLowerCase() : null;
}

/** The WWN of a dm-multipath map from /sys/block/dm-N/dm/uuid. */
export function wwnOfDmUuid(text: string): string | null {
  const m = new RegExp(`^mpath-3${HEX}$`).exec(text.trim());
  return m?.[1] ? m[1].toLowerCase() : null;
}
