import { posix } from 'node:path';
import { z } from '../../../src/core/zod.ts';
import type { Host } from '../../host/host.ts';
import { isMissingCommand } from '../../host/missing-command.ts';
import type { MountEntry } from '../../host/mountinfo.ts';
import { processFacts, scanMountNamespaces } from '../../host/proc-facts.ts';
import type { Known, PathHolder, TreeMount } from './facts.ts';
import { parsePodTree, treeArgv, type TreeEntry } from './pod-tree.ts';

// The reads observe() makes and execute-step repeats right before each change. The pods tree is
// only ever read by commands in the host's mount namespace (the Host runs them through nsenter in
// a DaemonSet): the agent's container does not mount /var/lib/kubelet (deploy/charts/volume-medic/templates/node-agent.yaml).
// /proc is read through the Host's root like every runbook's mount and holder scans.

const TIMEOUT_MS = 30_000;
const PIDS_NAMED = 5;

const underOrAt = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

export interface PathStat {
  /** stat's %F: `directory`, `regular file`, `regular empty file`, `symbolic link`, ... */
  type: string;
  dev: string;
  size: number;
}

/** `stat` of one path in the host's mount namespace; null when it does not exist. Throws when it cannot tell. */
export async function statPath(host: Host, path: string): Promise<PathStat | null> {
  const r = await host.run(['stat', '--printf', '%F\\t%d\\t%s\\n', '--', host.argPath(path)], { timeoutMs: TIMEOUT_MS });
  if (r.exitCode !== 0) {
    if (/No such file or directory/.test(r.stderr)) return null;
    throw new Error(`stat ${path} failed (exit ${r.exitCode ?? r.signal ?? '?'}): ${r.stderr.trim().slice(0, 200)}`);
  }
  const [type = '', dev = '', size = ''] = r.stdout.replace(/\n$/, '').split('\t');
  if (!/^[0-9]+$/.test(dev) || !/^[0-9]+$/.test(size)) throw new Error(`stat ${path} printed ${JSON.stringify(r.stdout.slice(0, 100))}`);
  return { type, dev, size: Number(size) };
}

export const isRegularFile = (s: PathStat): boolean => s.type === 'regular file' || s.type === 'regular empty file';

export async function readTree(host: Host, dir: string): Promise<Known<TreeEntry[]>> {
  const r = await host.run(treeArgv(host.argPath(dir)), { timeoutMs: TIMEOUT_MS });
  if (r.exitCode !== 0) return { known: false, why: `find ${dir} failed (exit ${r.exitCode ?? r.signal ?? '?'}): ${r.stderr.trim().slice(0, 200)}` };
  const t = parsePodTree(r.stdout);
  return t.ok ? { known: true, value: t.entries } : { known: false, why: `find ${dir}: ${t.problem}` };
}

/** Names of the entries directly in `dir` (`find -P <dir> -mindepth 1 -maxdepth 1 -printf '%f\0'`). */
export async function listDir(host: Host, dir: string): Promise<Known<string[]>> {
  const r = await host.run(['find', '-P', host.argPath(dir), '-mindepth', '1', '-maxdepth', '1', '-printf', '%f\\0'], { timeoutMs: TIMEOUT_MS });
  if (r.exitCode !== 0) return { known: false, why: `find ${dir} failed (exit ${r.exitCode ?? r.signal ?? '?'}): ${r.stderr.trim().slice(0, 200)}` };
  if (r.stdout !== '' && !r.stdout.endsWith('\0')) return { known: false, why: `find ${dir}: the listing does not end with a NUL` };
  return { known: true, value: r.stdout === '' ? [] : r.stdout.slice(0, -1).split('\0') };
}

const CrictlPods = z.object({ items: z.nullable(z.array(z.object({ metadata: z.object({ uid: z.string() }) }))) });

/** The pod UIDs of the runtime's sandboxes (`crictl pods -o json`). */
export async function runtimeUids(host: Host): Promise<Known<string[]>> {
  const r = await host.run(['crictl', 'pods', '-o', 'json'], { timeoutMs: TIMEOUT_MS });
  if (isMissingCommand(r)) return { known: false, why: 'crictl is not installed on the node' };
  if (r.exitCode !== 0) return { known: false, why: `crictl pods failed (exit ${r.exitCode ?? r.signal ?? '?'}): ${r.stderr.trim().slice(0, 200)}` };
  try {
    const parsed = CrictlPods.safeParse(JSON.parse(r.stdout));
    if (!parsed.success) return { known: false, why: 'crictl pods -o json printed an unexpected shape' };
    return { known: true, value: (parsed.data.items ?? []).map((i) => i.metadata.uid) };
  } catch {
    return { known: false, why: 'crictl pods -o json did not print JSON' };
  }
}

export async function kubeletActive(host: Host): Promise<Known<boolean>> {
  const r = await host.run(['systemctl', 'is-active', 'kubelet'], { timeoutMs: TIMEOUT_MS });
  if (isMissingCommand(r)) return { known: false, why: 'systemctl is not on the node' };
  const state = r.stdout.trim();
  if (state === '') return { known: false, why: `systemctl is-active kubelet printed nothing (exit ${r.exitCode ?? r.signal ?? '?'})` };
  return { known: true, value: state === 'active' };
}

export interface MountView {
  mounts: Array<{ namespace: string; host: boolean; pids: number[]; entry: MountEntry }>;
  unreadable: number[];
  /** Where the file system holding `podsDir` is mounted in the host's namespace, and the subtree it shows. */
  podsMount: { majorMinor: string; root: string; mountPoint: string } | null;
}

/** Every mount of every mount namespace, read now from /proc/<pid>/mountinfo. */
export async function readMounts(host: Host, podsDir: string): Promise<MountView> {
  const hostNs = await host.readlink('/proc/1/ns/mnt').catch(() => null);
  const scan = await scanMountNamespaces(host);
  const mounts = scan.namespaces.flatMap((ns) => ns.mounts.map((entry) => ({ namespace: ns.namespace, host: ns.namespace === hostNs, pids: ns.pids, entry })));
  const hostMounts = mounts.filter((m) => m.host && (m.entry.mountPoint === '/' || underOrAt(podsDir, m.entry.mountPoint)));
  const best = hostMounts.sort((a, b) => b.entry.mountPoint.length - a.entry.mountPoint.length || b.entry.id - a.entry.id)[0];
  return {
    mounts,
    unreadable: scan.unreadable,
    podsMount: best ? { majorMinor: best.entry.majorMinor, root: best.entry.root, mountPoint: best.entry.mountPoint } : null,
  };
}

/** Mounts at or under `dir` in any namespace, and binds whose source subtree lies under it. */
export async function mountsOfTree(host: Host, view: MountView, dir: string): Promise<TreeMount[]> {
  // The tree's path inside its file system, to recognise a bind of it (mountinfo's root field).
  const pm = view.podsMount;
  const fsPath = pm ? posix.join(pm.root, posix.relative(pm.mountPoint, dir)) : null;
  const out: TreeMount[] = [];
  for (const m of view.mounts) {
    const at = underOrAt(m.entry.mountPoint, dir);
    const source = !at && pm !== null && fsPath !== null && m.entry.majorMinor === pm.majorMinor && underOrAt(m.entry.root, fsPath);
    if (!at && !source) continue;
    const pids = [];
    // The host's namespace holds every kernel thread too: pid 1 says which namespace it is.
    const named = m.host && m.pids.includes(1) ? [1] : m.pids.slice(0, PIDS_NAMED);
    for (const pid of named) {
      const who = await processFacts(host, pid);
      pids.push({ pid, comm: who.comm, podUid: who.podUid });
    }
    out.push({
      namespace: m.namespace,
      host: m.host,
      pids,
      mountPoint: m.entry.mountPoint,
      root: m.entry.root,
      majorMinor: m.entry.majorMinor,
      how: at ? 'at-or-under' : 'source-under',
    });
  }
  return out;
}

const isPid = (s: string): boolean => /^[0-9]+$/.test(s);

/** Processes with their cwd, root or an open fd at or under `dir`. */
export async function holdersOfTree(host: Host, dir: string): Promise<PathHolder[]> {
  const out: PathHolder[] = [];
  for (const p of (await host.list('/proc')).filter(isPid)) {
    const links = ['cwd', 'root', ...(await host.list(`/proc/${p}/fd`).catch(() => [] as string[])).map((fd) => `fd/${fd}`)];
    for (const link of links) {
      const target = await host.readlink(`/proc/${p}/${link}`).catch(() => null);
      if (target === null || !underOrAt(target.replace(/ \(deleted\)$/, ''), dir)) continue;
      out.push({ pid: Number(p), comm: (await processFacts(host, Number(p))).comm, link, target });
    }
  }
  return out;
}

/** Loop devices whose backing file is under `dir`. */
export async function loopsOfTree(host: Host, dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await host.list('/sys/block')).filter((n) => /^loop[0-9]+$/.test(n))) {
    const backing = (await host.readFile(`/sys/block/${name}/loop/backing_file`).catch(() => null))?.trim();
    if (backing && underOrAt(backing.replace(/ \(deleted\)$/, ''), dir)) out.push(`/dev/${name}`);
  }
  return out;
}
