import type { ReadonlyFilesystemRecoveryJob } from '../../../src/core/catalogue/jobs.ts';
import type { Host } from '../../host/host.ts';
import { type MountEntry, parseMountinfo } from '../../host/mountinfo.ts';
import type { DeviceFacts, ReadonlyFacts } from './facts.ts';
import { findStoppedKubeletMounts, kubeletMountOf, systemMountPoints } from './kubelet-mounts.ts';
import { deviceHealth, probeDevice, recordHealth } from './observe-health.ts';
import { kernelFactsFor, readKernelLog, readSysfsErrors } from './observe-kernel.ts';
import type { ReadonlyPolicy } from './policy.ts';
import { type RecoveryLookups, readPodsAndVolumes } from './recovery-lookups.ts';

// Looks at everything docs/decisions/0008 §3.3 asks, through the Host port, each command with a
// deadline: which devices (the job's, or every kubelet PV mount the kernel stopped), their mounts
// in /proc/1/mountinfo, the kernel's word on them, whether they are healthy again, and the pods and
// PVs behind the mounts. Nothing here changes the node except this agent's own sightings file.

export interface ObserveDeps {
  policy: ReadonlyPolicy;
  /** undefined: no cluster access; the plan refuses (pods cannot be told apart). */
  lookups: RecoveryLookups | undefined;
  stateDir: string;
  now: () => Date;
}

const readTrimmed = async (host: Host, path: string): Promise<string | null> => (await host.readFile(path).catch(() => null))?.trim() ?? null;

async function devicesOf(
  job: ReadonlyFilesystemRecoveryJob,
  host: Host,
  policy: ReadonlyPolicy,
): Promise<Array<{ device: string; majorMinor: string | null }>> {
  if (job.target.device) {
    const mm = await readTrimmed(host, `/sys/block/${job.target.device}/dev`);
    return [{ device: job.target.device, majorMinor: mm && /^\d+:\d+$/.test(mm) ? mm : null }];
  }
  const seen = new Map<string, string>();
  for (const s of await findStoppedKubeletMounts(host, policy.kubeletRoot)) seen.set(s.device, s.majorMinor);
  return [...seen].map(([device, majorMinor]) => ({ device, majorMinor }));
}

function mountsOf(entries: readonly MountEntry[], majorMinor: string | null, policy: ReadonlyPolicy): Pick<DeviceFacts, 'mounts' | 'systemMounts' | 'fsType'> {
  const mine = majorMinor ? entries.filter((e) => e.majorMinor === majorMinor) : [];
  const system = systemMountPoints(policy.kubeletRoot);
  return {
    mounts: mine.flatMap((e) => kubeletMountOf(policy.kubeletRoot, e) ?? []),
    systemMounts: mine.filter((e) => system.has(e.mountPoint)).map((e) => e.mountPoint),
    fsType: mine[0]?.fsType ?? null,
  };
}

export async function observe(job: ReadonlyFilesystemRecoveryJob, host: Host, deps: ObserveDeps): Promise<ReadonlyFacts> {
  const { policy } = deps;
  const observedAt = deps.now().toISOString();
  const bootId = await readTrimmed(host, '/proc/sys/kernel/random/boot_id');
  const notes: string[] = [];
  const entries = parseMountinfo((await host.readFile('/proc/1/mountinfo')) ?? '');
  if (entries.length === 0) notes.push('/proc/1/mountinfo is unreadable or empty');
  const targets = await devicesOf(job, host, policy);
  const log = targets.length ? await readKernelLog(host, bootId, policy.commandTimeoutMs) : { ok: false as const, why: 'not read: no device' };

  const devices: DeviceFacts[] = [];
  for (const { device, majorMinor } of targets) {
    const rbd = device.startsWith('rbd');
    const health = rbd
      ? { kind: 'unknown' as const, why: "an RBD device: its health is Ceph's to tell" }
      : await deviceHealth(host, device, policy.commandTimeoutMs);
    const paths = health.kind === 'multipath' ? health.paths.flatMap((p) => (p.dev ? [p.dev] : [])) : [];
    const probe = rbd
      ? { outcome: 'not-run' as const, durationMs: 0, exitCode: null, stuckPids: [], detail: 'not read: an RBD device' }
      : await probeDevice(host, device, health, policy.probeTimeoutMs);
    devices.push({
      device,
      majorMinor,
      ...mountsOf(entries, majorMinor, policy),
      rbd,
      kernel: kernelFactsFor(log, device, paths),
      sysfs: await readSysfsErrors(host, device),
      health,
      probe,
      healthySince: null,
      pods: [],
      pvs: [],
    });
  }

  const sightings = await recordHealth(
    host,
    deps.stateDir,
    devices.map((d) => ({ dev: d.device, majorMinor: d.majorMinor, healthy: d.probe.outcome === 'readable' })),
    observedAt,
    bootId,
  );
  for (const d of devices) d.healthySince = sightings.get(d.device) ?? null;

  if (!deps.lookups) return { node: job.target.node, observedAt, bootId, kube: { ok: false, why: 'no access to the Kubernetes API' }, devices, notes };
  for (const d of devices) Object.assign(d, await readPodsAndVolumes(deps.lookups, job.target.node, d.mounts));
  return { node: job.target.node, observedAt, bootId, kube: { ok: true }, devices, notes };
}
