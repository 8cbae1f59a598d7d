// What a failed `rbd unmap` said (stderr; LC_ALL=C). Busy: `rbd: sysfs write failed` then
// `rbd: unmap failed: (16) Device or resource busy`. Already gone: `'/dev/rbd0' is not a block
// device` / `is not an rbd device` / `not a mapped image or snapshot` (all exit 22).

export const isBusy = (stderr: string): boolean => /\(16\) Device or resource busy/.test(stderr);

export const isNotMapped = (stderr: string): boolean => /is not a block device|is not an rbd device|not a mapped image or snapshot/.test(stderr);
