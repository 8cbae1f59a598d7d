import type { ReadonlyFilesystemRecoveryJob, RemediationJob } from '../../src/core/catalogue/jobs.ts';
import { idempotencyKey } from '../../src/core/catalogue/idempotency-keys.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { Host } from '../host/host.ts';
import { findStoppedKubeletMounts } from '../runbooks/readonly-filesystem-recovery/kubelet-mounts.ts';

// The node agent's own look for a PV file system the kernel stopped (docs/decisions/0008 §3.2):
// every READONLY_SCAN_SECONDS it reads /proc/1/mountinfo, and a kubelet PV mount (CSI staging or a
// pod's publish mount) whose mount options say rw while its super options say ro or emergency_ro,
// or whose ext4 counts errors (a 6.1 kernel shows a stopped ext4 nowhere in mountinfo), becomes a
// readonly-filesystem-recovery job for that device, on its own node's queue like any
// sender's, so modes, approvals and the audit trail apply. NPD's ReadonlyFilesystem condition names
// no device and is never cleared (§1.4); this scan is how the device is found. One key per device
// instance and boot: a job parked for that device folds a later sighting.

const readBootId = async (host: Host): Promise<string | null> => {
  const id = (await host.readFile('/proc/sys/kernel/random/boot_id').catch(() => null))?.trim() ?? null;
  return id && /^[A-Za-z0-9-]{1,64}$/.test(id) ? id : null;
};

export async function stoppedFileSystemJobs(host: Host, node: string, kubeletRoot: string): Promise<ReadonlyFilesystemRecoveryJob[]> {
  const stopped = await findStoppedKubeletMounts(host, kubeletRoot);
  if (stopped.length === 0) return [];
  const bootId = await readBootId(host);
  const byDevice = new Map<string, typeof stopped>();
  for (const s of stopped) byDevice.set(s.device, [...(byDevice.get(s.device) ?? []), s]);
  return [...byDevice].map(([device, mounts]) => ({
    version: 1,
    runbook: 'readonly-filesystem-recovery',
    key: idempotencyKey('readonly-fs', [node, device, mounts[0]?.majorMinor ?? '', bootId ?? 'unknown-boot']),
    target: { node, device },
    ...(bootId ? { bootId } : {}),
    evidence: [
      {
        source: 'agent',
        summary:
          `the kernel may have stopped the file system on ${device} (${mounts[0]?.majorMinor}): ${mounts.length} kubelet mount(s) rw, ${mounts[0]?.why}`.slice(
            0,
            500,
          ),
        raw: {
          device,
          mounts: mounts.map((m) => ({ mountPoint: m.mount.mountPoint, mountOptions: m.mount.mountOptions, superOptions: m.mount.superOptions })),
        },
      },
    ],
  }));
}

export interface ReadonlyScanOptions {
  node: string;
  host: Host;
  kubeletRoot: string;
  enqueue: (jobs: RemediationJob[]) => Promise<unknown>;
  /** 0: never. */
  intervalMs: number;
  log: Logger;
  every?: (ms: number, tick: () => void) => () => void;
}

/** Scans at every interval (not at start: kubelet may still be mounting); never throws. */
export function startReadonlyScan(opts: ReadonlyScanOptions): { stop: () => Promise<void> } {
  if (opts.intervalMs <= 0) return { stop: async () => {} };
  let running: Promise<void> = Promise.resolve();
  let busy = false;
  const scan = async (): Promise<void> => {
    try {
      const jobs = await stoppedFileSystemJobs(opts.host, opts.node, opts.kubeletRoot);
      if (jobs.length === 0) return;
      await opts.enqueue(jobs);
      opts.log.warn({ devices: jobs.map((j) => j.target.device) }, 'a PV file system the kernel stopped: recovery asked for');
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'could not scan mountinfo for file systems the kernel stopped');
    }
  };
  const tick = (): void => {
    if (busy) return;
    busy = true;
    running = scan().finally(() => {
      busy = false;
    });
  };
  const every =
    opts.every ??
    ((ms, t) => {
      const timer = setInterval(t, ms);
      timer.unref();
      return () => clearInterval(timer);
    });
  const cancel = every(opts.intervalMs, tick);
  return {
    stop: async () => {
      cancel();
      await running;
    },
  };
}
