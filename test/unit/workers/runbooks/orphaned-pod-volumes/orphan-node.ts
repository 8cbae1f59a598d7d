import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import { DEV, NODE, PODS, UID } from './facts.fixture.ts';

// A simulated node for the runbook's commands: the pods tree lives in the FakeHost's nodes, and
// the scripts answer stat, find -printf, cat, unlink, rmdir, crictl and systemctl from it the way
// coreutils and findutils would. Mount namespaces are /proc/<pid>/{ns/mnt,mountinfo,stat}.

export const POD_DIR = `${PODS}/${UID}`;
export const CSI_VOL = `${POD_DIR}/volumes/kubernetes.io~csi/pvc-1`;
const HOST_NS = 'mnt:[4026531840]';

const volDataOf = (node: string): string =>
  readFileSync(new URL('../../../../fixtures/kubelet/vol_data.json', import.meta.url), 'utf8')
    .replace('"haaaa-10-30-100-149"', JSON.stringify(node))
    .replace(/pvc-dca8527d-0939-4c6a-a2cc-e66a673f062c/g, 'pvc-1');

export interface OrphanNode {
  host: FakeHost;
  /** UIDs crictl lists. */
  sandboxes: Set<string>;
  /** st_dev of paths that are on another file system than pods/. */
  devs: Map<string, string>;
  /** Adds a process in its own mount namespace whose mount table has `mounts` (mount points). */
  addNamespace(pid: number, comm: string, mountPoints: string[]): void;
  /** Adds a mount in the host's namespace. */
  hostMount(mountPoint: string, majorMinor?: string): void;
  changes(): string[];
}

const procStat = (pid: number, comm: string): string => `${pid} (${comm}) S 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1234 0 0`;
const mountLine = (id: number, mm: string, root: string, mp: string): string => `${id} 1 ${mm} ${root} ${mp} rw,relatime shared:1 - ext4 /dev/sda1 rw`;

export function orphanNode(opts: { node?: string } = {}): OrphanNode {
  const host = new FakeHost();
  const sandboxes = new Set<string>();
  const devs = new Map<string, string>();
  const hostMounts: string[] = [mountLine(1, '8:1', '/', '/')];
  const dirs = [
    PODS,
    POD_DIR,
    `${POD_DIR}/volumes`,
    `${POD_DIR}/volumes/kubernetes.io~csi`,
    CSI_VOL,
    `${CSI_VOL}/mount`,
    `${POD_DIR}/volumes/kubernetes.io~empty-dir`,
    `${POD_DIR}/volumes/kubernetes.io~empty-dir/cache`,
    `${POD_DIR}/containers`,
    `${POD_DIR}/containers/app`,
  ];
  for (const d of dirs) host.put(d, { type: 'dir' });
  host.put(`${CSI_VOL}/vol_data.json`, volDataOf(opts.node ?? NODE));
  host.put(`${POD_DIR}/containers/app/0a1b2c3d`, '');
  host.put(`${POD_DIR}/etc-hosts`, '127.0.0.1 localhost\n');
  host.put('/proc/1/ns/mnt', { type: 'symlink', target: HOST_NS });
  host.put('/proc/1/stat', procStat(1, 'systemd'));
  const syncHostMounts = (): void => {
    host.put('/proc/1/mountinfo', `${hostMounts.join('\n')}\n`);
  };
  syncHostMounts();

  const typeOf = (p: string): { letter: string; stat: string; size: number } | null => {
    const n = host.nodes.get(p);
    if (!n) return null;
    if (n.type === 'dir') return { letter: 'd', stat: 'directory', size: 4096 };
    if (n.type === 'file') return { letter: 'f', stat: n.content === '' ? 'regular empty file' : 'regular file', size: Buffer.byteLength(n.content) };
    if (n.type === 'symlink') return { letter: 'l', stat: 'symbolic link', size: n.target.length };
    return { letter: 'b', stat: 'block special file', size: 0 };
  };
  const devOf = (p: string): string => devs.get(p) ?? DEV;
  const children = (dir: string): string[] => [...host.nodes.keys()].filter((k) => posix.dirname(k) === dir).sort();
  const missing = (what: string, p: string) => ({ exitCode: 1, stderr: `${what}: cannot access '${p}': No such file or directory\n` });

  host.on(['stat'], (argv) => {
    const p = argv.at(-1) ?? '';
    const t = typeOf(p);
    return t ? { stdout: `${t.stat}\t${devOf(p)}\t${t.size}\n` } : missing('stat', p);
  });
  host.on(['find'], (argv) => {
    const start = argv[2] ?? '';
    if (!typeOf(start)) return missing('find', start);
    if (argv.includes('-maxdepth'))
      return {
        stdout: children(start)
          .map((c) => `${(argv.at(-1) ?? '').startsWith('%y') ? `${typeOf(c)?.letter}\t` : ''}${posix.basename(c)}\0`)
          .join(''),
      };
    const out: string[] = [];
    const walk = (p: string): void => {
      const t = typeOf(p);
      if (!t) return;
      out.push(`${t.letter}\t${devOf(p)}\t${t.size}\t${p === start ? '' : posix.relative(start, p)}\0`);
      // -xdev: a directory on another file system is listed, not entered.
      if (t.letter === 'd' && devOf(p) === devOf(start)) for (const c of children(p)) walk(c);
    };
    walk(start);
    return { stdout: out.join('') };
  });
  host.on(['cat', '--'], (argv) => {
    const n = host.nodes.get(argv[2] ?? '');
    return n?.type === 'file' ? { stdout: n.content } : missing('cat', argv[2] ?? '');
  });
  host.on(['unlink', '--'], (argv) => (host.nodes.delete(argv[2] ?? '') ? {} : missing('unlink', argv[2] ?? '')));
  host.on(['rmdir', '--'], (argv) => {
    const p = argv[2] ?? '';
    if (children(p).length) return { exitCode: 1, stderr: `rmdir: failed to remove '${p}': Directory not empty\n` };
    if (hostMounts.some((l) => l.split(' ')[4] === p)) return { exitCode: 1, stderr: `rmdir: failed to remove '${p}': Device or resource busy\n` };
    return host.nodes.delete(p) ? {} : missing('rmdir', p);
  });
  host.on(['crictl', 'pods'], () => ({
    stdout: JSON.stringify({ items: [...sandboxes].map((uid) => ({ id: 'x', metadata: { uid, name: 'p', namespace: 'ns' } })) }),
  }));
  host.on(['systemctl', 'is-active', 'kubelet'], { stdout: 'active\n' });

  return {
    host,
    sandboxes,
    devs,
    addNamespace(pid, comm, mountPoints) {
      host.put(`/proc/${pid}/ns/mnt`, { type: 'symlink', target: `mnt:[40265323${pid}]` });
      host.put(`/proc/${pid}/stat`, procStat(pid, comm));
      host.put(
        `/proc/${pid}/mountinfo`,
        `${[mountLine(1, '8:1', '/', '/'), ...mountPoints.map((mp, i) => mountLine(100 + i, '253:3', '/', mp))].join('\n')}\n`,
      );
    },
    hostMount(mountPoint, majorMinor = '253:3') {
      hostMounts.push(mountLine(200 + hostMounts.length, majorMinor, '/', mountPoint));
      syncHostMounts();
    },
    changes: () => host.commands.filter((c) => c[0] === 'unlink' || c[0] === 'rmdir').map((c) => c.join(' ')),
  };
}
