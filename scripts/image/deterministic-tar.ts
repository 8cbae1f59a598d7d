import { spawnSync } from 'node:child_process';

// One layer = one directory packed by GNU tar so that the same files give the same bytes:
// entries sorted by name, every mtime set to SOURCE_DATE_EPOCH (dpkg's postinst scripts and our
// staging write files "now"), PAX headers without atime/ctime and with a fixed name pattern
// (GNU tar's default PAX header name holds the process id), no xattrs, no ACLs. Ownership is the
// directory's own, numerically (the Debian root file system has files owned by ceph, for
// example), unless `owner0` flattens it to root:root (the app layer, staged by whoever built it).
// Then `gzip -n`: no name or time in the gzip header; the bytes depend only on the input and
// gzip's version (pinned by the Debian release the build runs on).

export interface TarOptions {
  /** Directory whose contents become the layer's root. */
  dir: string;
  /** Where to write the uncompressed tar. */
  out: string;
  /** Seconds since the epoch; every entry's mtime. */
  epoch: number;
  /** Paths (relative, `./x` style) to leave out, e.g. `./dev/*`. */
  exclude?: readonly string[];
  /** Record every entry as 0:0 (files staged by an unprivileged builder). */
  owner0?: boolean;
}

export function deterministicTar(o: TarOptions): void {
  const args = [
    '--create',
    '--file',
    o.out,
    '--directory',
    o.dir,
    '--sort=name',
    '--format=posix',
    '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
    `--mtime=@${o.epoch}`,
    '--numeric-owner',
    '--no-xattrs',
    '--no-acls',
    '--no-selinux',
    ...(o.owner0 ? ['--owner=0', '--group=0'] : []),
    ...(o.exclude ?? []).map((e) => `--exclude=${e}`),
    '.',
  ];
  const r = spawnSync('tar', args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`tar ${o.dir} failed (exit ${r.status})`);
}

/** gzip -n: the compressed layer, no name or timestamp in its header. */
export function gzipFile(input: string, out: string): void {
  const r = spawnSync('sh', ['-c', 'gzip -n -6 -c -- "$1" > "$2"', 'gzip', input, out], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`gzip ${input} failed (exit ${r.status})`);
}
