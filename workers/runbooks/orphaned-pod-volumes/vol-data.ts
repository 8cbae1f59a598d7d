import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { z } from '../../../src/core/zod.ts';
import type { Host } from '../../host/host.ts';
import type { VolData } from './facts.ts';

// kubelet's metadata of a CSI volume, `volumes/kubernetes.io~csi/<vol>/vol_data.json`
// (pkg/volume/csi/csi_util.go saveVolumeData): the file kubelet needs to unstage the volume
// (PR #102576), so it is removed only when the volume is staged nowhere on the node. Read with
// `cat` in the host's mount namespace, never through the agent's own view.

export const VOL_DATA_MAX_BYTES = 4096;
export const CSI_DIR = 'volumes/kubernetes.io~csi';

const VolDataJson = z.object({
  specVolID: z.string(),
  volumeHandle: z.string(),
  driverName: z.string(),
  nodeName: z.string(),
  attachmentID: z.optional(z.string()),
  volumeLifecycleMode: z.optional(z.string()),
});

/** `volumes/kubernetes.io~csi/<vol>/vol_data.json` -> `<vol>`; null for any other path. */
export function volDataVolume(rel: string): string | null {
  const m = /^volumes\/kubernetes\.io~csi\/([^/]+)\/vol_data\.json$/.exec(rel);
  return m?.[1] ?? null;
}

export function parseVolData(text: string): VolData['parsed'] | string {
  try {
    const r = VolDataJson.safeParse(JSON.parse(text));
    if (!r.success) return 'not the shape kubelet writes (specVolID, volumeHandle, driverName, nodeName)';
    const { specVolID, volumeHandle, driverName, nodeName } = r.data;
    return { specVolID, volumeHandle, driverName, nodeName };
  } catch {
    return 'not JSON';
  }
}

/**
 * Where kubelet stages the volume: `plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount`
 * (1.24+) and `plugins/kubernetes.io/csi/pv/<pv>/globalmount` (older).
 */
export function stagingPaths(kubeletRoot: string, v: NonNullable<VolData['parsed']>): string[] {
  const base = posix.join(kubeletRoot, 'plugins/kubernetes.io/csi');
  const out: string[] = [];
  if (/^[A-Za-z0-9._-]+$/.test(v.driverName))
    out.push(posix.join(base, v.driverName, createHash('sha256').update(v.volumeHandle).digest('hex'), 'globalmount'));
  if (/^[A-Za-z0-9._-]+$/.test(v.specVolID)) out.push(posix.join(base, 'pv', v.specVolID, 'globalmount'));
  return out;
}

export async function readVolData(host: Host, path: string): Promise<VolData['parsed'] | string> {
  const r = await host.run(['cat', '--', host.argPath(path)], { timeoutMs: 10_000 });
  if (r.exitCode !== 0) return `cat failed (exit ${r.exitCode ?? r.signal ?? '?'}): ${r.stderr.trim().slice(0, 200)}`;
  if (Buffer.byteLength(r.stdout) > VOL_DATA_MAX_BYTES) return `larger than ${VOL_DATA_MAX_BYTES} bytes`;
  return parseVolData(r.stdout);
}
