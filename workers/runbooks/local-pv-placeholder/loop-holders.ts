import { posix } from 'node:path';
import type { Host } from '../../host/host.ts';
import { followLink } from '../../host/follow-link.ts';
import { findOpeners, scanMountNamespaces } from '../../host/proc-facts.ts';
import { sysBlockPath } from '../../host/paths.ts';
import type { LoopAttachment } from './loops.ts';

// Who still uses a placeholder loop device. `losetup -d` on a device that is open does not
// detach it: the kernel only marks it to go at the last close, so the image and record would be
// gone while a pod still reads the placeholder. A release therefore goes ahead only when nothing
// holds the device: no process has it open (/proc/*/fd), no mount namespace mounts it or binds
// its node (kubelet binds a block PV's device under its plugins directory), no device is stacked
// on it (/sys/block/loopN/holders), and no other loop device is backed by it (kubelet's own
// `losetup` of a block PV).

const LOOP_MAJOR = 7;

/** A command's path (losetup's BACK-FILE) as a host path: the agent's root taken off again. */
function hostPathOf(host: Host, commandPath: string): string | null {
  const base = host.argPath('/').replace(/\/$/, '');
  if (base === '') return commandPath;
  return commandPath.startsWith(`${base}/`) ? commandPath.slice(base.length) : null;
}

/** What holds each of `loops`, in words; a loop held by nothing has an empty list. */
export async function loopHolders(host: Host, loops: readonly string[], attached: readonly LoopAttachment[]): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = Object.fromEntries(loops.map((l) => [l, [] as string[]]));
  if (loops.length === 0) return out;
  const byPath = new Map(loops.map((l) => [`/dev/${l}`, l]));
  const byNumber = new Map(loops.map((l) => [`${LOOP_MAJOR}:${l.slice('loop'.length)}`, l]));

  const openers = await findOpeners(host, new Set(byPath.keys()));
  for (const [path, list] of openers) {
    const loop = byPath.get(path);
    if (loop) for (const o of list) out[loop]?.push(`pid ${o.pid} (${o.comm}${o.podUid ? `, pod UID ${o.podUid}` : ''}) has it open`);
  }

  const mounts = await scanMountNamespaces(host);
  for (const ns of mounts.namespaces) {
    for (const m of ns.mounts) {
      // A file system on the device (its number), or a bind mount of its node (devtmpfs, root /loopN).
      const loop = byNumber.get(m.majorMinor) ?? (m.fsType === 'devtmpfs' && loops.includes(m.root.slice(1)) ? m.root.slice(1) : undefined);
      if (loop) out[loop]?.push(`mounted at ${m.mountPoint} (${ns.namespace}, pids ${ns.pids.slice(0, 5).join(', ')})`);
    }
  }

  for (const loop of loops) {
    for (const h of await host.list(sysBlockPath(loop, 'holders')).catch(() => [] as string[]))
      out[loop]?.push(`${h} is stacked on it (/sys/block/${loop}/holders)`);
  }

  for (const a of attached) {
    if (a.backFile === null || loops.includes(a.loop)) continue;
    const path = hostPathOf(host, a.backFile);
    if (path === null || !posix.isAbsolute(path)) continue;
    const end = await followLink(host, path);
    if (end.info?.type !== 'block' || end.info.major !== LOOP_MAJOR) continue;
    const held = `loop${end.info.minor}`;
    out[held]?.push(`${a.loop} is backed by it (${a.backFile})`);
  }
  return out;
}
