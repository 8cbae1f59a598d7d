import { posix } from 'node:path';
import { DEVICE_PATTERNS, isDeviceName, isDiskLinkPath } from '../../src/core/catalogue/names.ts';

// Names from input become paths only through these functions (device names are checked
// against strict patterns before any path is built). A bad name is an error, never "cleaned".

export class InvalidNameError extends Error {
  override name = 'InvalidNameError';
}

export type DeviceKind = keyof typeof DEVICE_PATTERNS;

function assertDeviceName(name: string, kind?: DeviceKind): string {
  const ok = kind ? DEVICE_PATTERNS[kind].test(name) : isDeviceName(name);
  if (!ok) throw new InvalidNameError(`not a valid ${kind ?? 'block'} device name: ${JSON.stringify(name)}`);
  return name;
}

/** `/dev/<name>` for a validated kernel device name. */
export function devPath(name: string, kind?: DeviceKind): string {
  return `/dev/${assertDeviceName(name, kind)}`;
}

/** `/sys/block/<name>/<attr...>` for a validated device name; attribute parts are ours, not input. */
export function sysBlockPath(name: string, ...attr: string[]): string {
  return posix.join('/sys/block', assertDeviceName(name), ...attr);
}

export function assertDiskLinkPath(path: string): string {
  if (!isDiskLinkPath(path)) throw new InvalidNameError(`not a /dev/disk/by-* link: ${JSON.stringify(path)}`);
  return path;
}

/**
 * A host path must be absolute and already normal: no `..`, no `.`, no `//`, no NUL. Normalising
 * silently would let `/dev/disk/by-id/../../etc` through as `/etc`; refusing keeps paths auditable.
 */
export function assertHostPath(path: string): string {
  if (!path.startsWith('/') || path.includes('\0') || posix.normalize(path) !== path || path.split('/').includes('..')) {
    throw new InvalidNameError(`not a normal absolute host path: ${JSON.stringify(path)}`);
  }
  return path;
}

/** Where a host path lives for the agent's own file system calls. */
export function underRoot(root: string, hostPath: string): string {
  assertHostPath(hostPath);
  return root === '/' ? hostPath : posix.join(root, hostPath);
}
