// The Host port over a lab guest: the real runbook code runs on this machine and acts on the
// guest's kernel. Commands go through the lab command channel; file reads come from one python
// walk of what observe/act/verify read (sysfs, /proc, /dev, the state dir), taken again after
// every command or write, so a run needs a few round trips instead of thousands.
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import type { FileInfo, Host } from '../../workers/host/host.ts';
import { assertHostPath } from '../../workers/host/paths.ts';
import type { LabVm } from './vm.ts';

const snapshotPy = (stateDir: string): string => `
import json, os, stat, sys
out = {}
def rec(p, read=True):
    try:
        st = os.lstat(p)
    except OSError:
        return
    m = st.st_mode
    if stat.S_ISLNK(m):
        try: out[p] = {'t': 'l', 'v': os.readlink(p)}
        except OSError: pass
    elif stat.S_ISDIR(m): out[p] = {'t': 'd'}
    elif stat.S_ISBLK(m): out[p] = {'t': 'b', 'ma': os.major(st.st_rdev), 'mi': os.minor(st.st_rdev)}
    else:
        v = None
        if read:
            try:
                with open(p, errors='replace') as f: v = f.read()
            except OSError: v = None
        out[p] = {'t': 'f', 'v': v}
def ls(d):
    try: return sorted(os.listdir(d))
    except OSError: return []
rec('/sys/block')
for b in ls('/sys/block'):
    base = '/sys/block/' + b
    rec(base)
    for sub in ('dev', 'dm', 'dm/uuid', 'dm/name', 'device', 'device/state', 'device/wwid', 'slaves', 'holders', 'loop', 'loop/backing_file'):
        rec(base + '/' + sub)
    rec(base + '/device/delete', read=False)
    for d in ('slaves', 'holders'):
        for e in ls(base + '/' + d): rec(base + '/' + d + '/' + e)
for f in ('add', 'remove', 'add_single_major', 'remove_single_major'): rec('/sys/bus/rbd/' + f, read=False)
rec('/sys/bus/rbd/devices')
for d in ls('/sys/bus/rbd/devices'):
    base = '/sys/bus/rbd/devices/' + d
    rec(base)
    for f in ('client_addr', 'client_id', 'pool', 'name', 'current_snap'): rec(base + '/' + f)
rec('/proc'); rec('/proc/swaps'); rec('/proc/sys/kernel/random/boot_id')
lio = '/sys/kernel/config/target/core'
rec(lio)
for hba in ls(lio):
    rec(lio + '/' + hba)
    for dev in ls(lio + '/' + hba):
        rec(lio + '/' + hba + '/' + dev)
        rec(lio + '/' + hba + '/' + dev + '/udev_path')
for pid in ls('/proc'):
    if not pid.isdigit(): continue
    p = '/proc/' + pid
    rec(p); rec(p + '/ns/mnt'); rec(p + '/stat'); rec(p + '/mountinfo'); rec(p + '/cgroup'); rec(p + '/fd'); rec(p + '/task')
    rec(p + '/cwd'); rec(p + '/root')
    for fd in ls(p + '/fd'): rec(p + '/fd/' + fd)
    seen = set()
    for tid in ls(p + '/task'):
        t = p + '/task/' + tid
        rec(t); rec(t + '/ns/mnt')
        ns = out.get(t + '/ns/mnt', {}).get('v')
        if ns not in seen:
            seen.add(ns); rec(t + '/mountinfo')
for d in ('/dev/disk/by-id', '/dev/mapper', '/dev/rbd'):
    rec(d)
    for e in ls(d):
        rec(d + '/' + e)
        for f in ls(d + '/' + e): rec(d + '/' + e + '/' + f)
for b in ls('/dev'):
    if b.startswith('rbd') and b[3:].isdigit(): rec('/dev/' + b)
for root, dirs, files in os.walk('${stateDir}'):
    rec(root)
    for f in files: rec(os.path.join(root, f))
json.dump(out, sys.stdout)
`;

type Entry = { t: 'l'; v: string } | { t: 'd' } | { t: 'b'; ma: number; mi: number } | { t: 'f'; v: string | null };

/** What guestHost needs of a lab VM. */
export type GuestCommands = Pick<LabVm, 'run' | 'runOk'>;

export interface GuestHostStats {
  snapshots: number;
  commands: number;
}

/**
 * A node whose host has no `rbd` (ceph-csi brings its own in its container): every `rbd`
 * command answers as nsenter does for a missing program; everything else passes through.
 */
export function withoutRbdCli(inner: Host): Host {
  return {
    ...inner,
    async run(argv, options) {
      if (argv[0] !== 'rbd') return inner.run(argv, options);
      return {
        argv: [...argv],
        exitCode: 127,
        signal: null,
        timedOut: false,
        durationMs: 0,
        stdout: '',
        stderr: 'nsenter: failed to execute rbd: No such file or directory\n',
      };
    },
  };
}

/**
 * The Host port over the lab VM: commands run in the guest, files are read from a snapshot. Only
 * `run`/`runOk` of the VM are used, so a test can pass a stand-in that records every command or
 * relays them from another process (residual-child.ts).
 */
export function guestHost(vm: GuestCommands, stats: GuestHostStats, stateDir: string): Host {
  const script = snapshotPy(stateDir);
  let snap: Map<string, Entry> | null = null;
  const load = async (): Promise<Map<string, Entry>> => {
    if (snap) return snap;
    const r = await vm.runOk(['python3', '-'], { stdin: script, timeoutMs: 60_000 });
    stats.snapshots++;
    snap = new Map(Object.entries(JSON.parse(r.stdout) as Record<string, Entry>));
    return snap;
  };
  const changed = () => {
    snap = null;
  };
  const must = async (argv: string[], stdin?: string) => {
    changed();
    const r = await vm.run(argv, stdin === undefined ? {} : { stdin });
    if (r.code !== 0) {
      const code = /No such file/.test(r.stderr)
        ? 'ENOENT'
        : /Device or resource busy/.test(r.stderr)
          ? 'EBUSY'
          : /No such device/.test(r.stderr)
            ? 'ENODEV'
            : 'EIO';
      throw Object.assign(new Error(`${argv.join(' ')}: ${r.stderr.trim()}`), { code });
    }
  };
  return {
    async run(argv, options): Promise<CommandRecord> {
      changed();
      stats.commands++;
      const r = await vm.run(argv, { timeoutMs: options?.timeoutMs ?? 30_000 });
      return {
        argv: [...argv],
        exitCode: r.code,
        signal: r.signal,
        timedOut: r.timedOut,
        durationMs: r.durationMs,
        stdout: r.stdout,
        stderr: r.stderr,
        ...(r.timedOut ? { stuckPids: r.stuckPids } : {}),
      };
    },
    argPath: (p) => assertHostPath(p),
    async readFile(p) {
      const e = (await load()).get(assertHostPath(p));
      if (e?.t === 'f') return e.v;
      if (e === undefined && p.startsWith(stateDir)) return null;
      if (e === undefined && !p.startsWith('/sys/') && !p.startsWith('/proc/')) {
        // Not covered by the snapshot: ask the guest.
        const r = await vm.run(['cat', p]);
        return r.code === 0 ? r.stdout : null;
      }
      return null;
    },
    async readlink(p) {
      const e = (await load()).get(assertHostPath(p));
      return e?.t === 'l' ? e.v : null;
    },
    async lstat(p): Promise<FileInfo | null> {
      const e = (await load()).get(assertHostPath(p));
      if (!e) return null;
      switch (e.t) {
        case 'l':
          return { type: 'symlink', size: e.v.length };
        case 'd':
          return { type: 'dir', size: 0 };
        case 'b':
          return { type: 'block', size: 0, major: e.ma, minor: e.mi };
        default:
          return { type: 'file', size: e.v?.length ?? 0 };
      }
    },
    async list(dir) {
      const prefix = `${assertHostPath(dir).replace(/\/$/, '')}/`;
      const names = new Set<string>();
      for (const k of (await load()).keys()) if (k.startsWith(prefix)) names.add(k.slice(prefix.length).split('/')[0] ?? '');
      names.delete('');
      return [...names].sort();
    },
    writeFile: (p, data) => must(['tee', assertHostPath(p)], typeof data === 'string' ? data : Buffer.from(data).toString('latin1')),
    writeSysfs: (p, value) => must(['tee', assertHostPath(p)], value),
    symlink: (target, p) => must(['ln', '-s', target, assertHostPath(p)]),
    rename: (from, to) => must(['mv', '-T', assertHostPath(from), assertHostPath(to)]),
    async unlink(p) {
      const existed = (await load()).has(assertHostPath(p));
      await must(['rm', '-f', p]);
      return existed;
    },
    mkdir: (p) => must(['mkdir', '-p', assertHostPath(p)]),
  };
}
