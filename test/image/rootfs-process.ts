import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// Running a process of an unpacked image without a container engine: a private mount and pid
// namespace (unshare), the image's root file system bound read-only onto itself (the chart sets
// readOnlyRootFilesystem), /dev, /proc and a /tmp mounted in, then chroot with the user, working
// directory and environment a runtime would take from the image configuration. The network
// namespace stays the machine's, so a Redis on 127.0.0.1 is reachable, as with `podman --network=host`.
// Needs root (mount, chroot).

export interface ImageConfig {
  User?: string;
  Env?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
}

/** The image's config (index.json -> manifest -> config) and its manifest digest. */
export function readImage(layout: string): {
  digest: string;
  manifest: { layers: { digest: string; mediaType: string }[]; annotations?: Record<string, string> };
  config: { config: ImageConfig; created: string };
} {
  const blob = (d: string) => JSON.parse(readFileSync(join(layout, 'blobs/sha256', d.replace(/^sha256:/, '')), 'utf8'));
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  const digest = index.manifests[0]!.digest;
  const manifest = blob(digest);
  return { digest, manifest, config: blob(manifest.config.digest) };
}

/**
 * Unpacks the layout's image into `dir` (rootfs under dir/rootfs): with umoci when present
 * (it checks every blob's digest, as a runtime would), else by applying the gzip layers in order
 * (ours have no whiteouts).
 */
export function unpack(layout: string, tag: string, dir: string): string {
  const rootfs = join(dir, 'rootfs');
  if (spawnSync('sh', ['-c', 'command -v umoci'], { stdio: 'ignore' }).status === 0) {
    const r = spawnSync('umoci', ['unpack', '--image', `${layout}:${tag}`, dir], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`umoci unpack failed: ${r.stderr}`);
    return rootfs;
  }
  mkdirSync(rootfs, { recursive: true });
  for (const l of readImage(layout).manifest.layers) {
    const r = spawnSync('tar', ['-xzpf', join(layout, 'blobs/sha256', l.digest.slice(7)), '-C', rootfs, '--numeric-owner'], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`tar -x ${l.digest} failed: ${r.stderr}`);
  }
  return rootfs;
}

const WRAPPER = `set -eu
root=$1 user=$2 cwd=$3; shift 3
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
# Writable volumes, as the chart mounts them: VM_BINDS="host-dir:image-dir ..."
for b in \${VM_BINDS:-}; do mount --bind "\${b%%:*}" "$root\${b#*:}"; done
exec chroot --userspec="$user" "$root" /usr/bin/env -i -C "$cwd" "$@"
`;

export interface RootfsProcess {
  child: ChildProcess;
  output: () => string;
  waitFor: (re: RegExp, ms?: number) => Promise<string>;
  stop: () => Promise<void>;
}

/**
 * Starts `argv` inside `rootfs`. `binds` put host directories at paths in the image (missing
 * mount points are made in the unpacked tree first: the root is read-only once started).
 */
export function startInRootfs(
  rootfs: string,
  opts: {
    user: string;
    cwd: string;
    env: Record<string, string>;
    argv: string[];
    binds?: readonly (readonly [host: string, image: string])[];
  },
): RootfsProcess {
  for (const [, target] of opts.binds ?? []) if (!existsSync(join(rootfs, target))) mkdirSync(join(rootfs, target), { recursive: true });
  const envArgs = Object.entries(opts.env).map(([k, v]) => `${k}=${v}`);
  const user = /:/.test(opts.user) ? opts.user : `${opts.user}:${opts.user}`;
  // --kill-child=SIGTERM: when unshare goes (SIGKILL below), the namespace's first process gets
  // SIGTERM and shuts down as under a kubelet; the pid namespace takes everything else with it.
  const child = spawn(
    'unshare',
    [
      '--mount',
      '--pid',
      '--fork',
      '--kill-child=SIGTERM',
      '--propagation',
      'private',
      'sh',
      '-c',
      WRAPPER,
      'sh',
      rootfs,
      user,
      opts.cwd,
      ...envArgs,
      ...opts.argv,
    ],
    {
      env: {
        PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin',
        VM_BINDS: (opts.binds ?? []).map(([h, t]) => `${h}:${t}`).join(' '),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = once(child, 'exit');
  return {
    child,
    output: () => text,
    async waitFor(re, ms = 30_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = re.exec(text);
        if (m) return m[0];
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${child.exitCode ?? child.signalCode}) before ${re}:\n${text}`);
        if (Date.now() > deadline) throw new Error(`no ${re} within ${ms} ms:\n${text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // The namespace's first process (the image's node, after the exec chain) is unshare's child.
      let inner: number[] = [];
      try {
        inner = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        /* already gone */
      }
      child.kill('SIGKILL');
      await exited;
      const alive = (pid: number) => {
        try {
          return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
        } catch {
          return false;
        }
      };
      const deadline = Date.now() + 15_000;
      while (inner.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      for (const pid of inner.filter(alive)) process.kill(pid, 'SIGKILL');
    },
  };
}

/** Mount points under `dir` in this mount namespace: none may remain before `dir` is removed. */
export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => p.startsWith(dir));
}

export const canRunRootfs = (): string | undefined => {
  if (process.getuid?.() !== 0) return 'needs root (mount, chroot)';
  for (const bin of ['unshare', 'chroot']) if (spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status !== 0) return `${bin} is missing`;
  return undefined;
};
