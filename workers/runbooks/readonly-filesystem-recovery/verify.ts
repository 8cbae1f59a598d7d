import type { Host } from '../../host/host.ts';
import { parseMountinfo } from '../../host/mountinfo.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { type Check, type Verification, verification } from '../../engine/runbook.ts';
import { parseDumpe2fsHeader } from './dumpe2fs.ts';
import { kubeletMountOf, superStopped } from './kubelet-mounts.ts';
import { kernelDevPath } from './observe-health.ts';
import { mountedAgainSince, readSysfsErrors } from './observe-kernel.ts';
import type { ReadonlyPolicy } from './policy.ts';

// Observes again (docs/decisions/0008 §3.6), looking every verifyPollMs for up to verifyMs, for
// kubelet and the CSI driver to unpublish, unstage, check and mount again:
//  (a) none of the stopped mounts is left (by mount id: a 6.1 kernel shows a stopped ext4 as rw),
//      nor any mount of the device (its major:minor) with super options ro/emergency_ro;
//  (b) if the device is mounted again under kubelet: super options rw, and the file system carries
//      no error (/sys/fs/ext4/<dev>/errors_count 0, or `dumpe2fs -h` says `clean`);
//  (c) a pod other than the deleted ones publishing the device while a stopped mount is left means it was
//      mounted again before it was unstaged: `remounted-before-unstage`, at once (the new pod got
//      the same read-only super block; an alert says so).
// NPD's ReadonlyFilesystem condition is never the verify: NPD never clears it (§1.4).

export interface VerifyTarget {
  device: string;
  majorMinor: string;
  /** UIDs of the pods this job deleted (or found terminating). */
  deletedUids: readonly string[];
  /** mountinfo ids of the stopped mounts: they must go (a 6.1 kernel shows a stopped ext4 as rw). */
  stoppedMountIds: readonly number[];
  /** When the kernel stopped it: ids are reused, so a mount of the device logged after this is a new one. */
  stoppedAt: string | null;
}

export interface VerifyDeps {
  policy: ReadonlyPolicy;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

type Look = { done: boolean; checks: Check[] };

async function fileSystemState(host: Host, device: string, policy: ReadonlyPolicy): Promise<Check> {
  const sysfs = await readSysfsErrors(host, device);
  if (sysfs.errorsCount === 0) return { what: `${device} records no error (errors_count 0)`, ok: true };
  const r = await host.run(['dumpe2fs', '-h', host.argPath(kernelDevPath(device))], { timeoutMs: policy.commandTimeoutMs });
  const header = !wasSimulated(r) && r.exitCode === 0 ? parseDumpe2fsHeader(r.stdout) : null;
  if (!header)
    return {
      what: `the file system state of ${device} is known`,
      ok: false,
      detail: `errors_count ${sysfs.errorsCount ?? 'absent'}; dumpe2fs -h gave no header`,
    };
  return {
    what: `${device}'s file system state is clean`,
    ok: header.clean,
    detail: `Filesystem state: ${header.state}; FS Error count: ${header.errorCount}`,
  };
}

async function look(host: Host, t: VerifyTarget, policy: ReadonlyPolicy): Promise<Look> {
  const entries = parseMountinfo((await host.readFile('/proc/1/mountinfo')) ?? '').filter((e) => e.majorMinor === t.majorMinor);
  const sameIds = entries.filter((e) => t.stoppedMountIds.includes(e.id));
  const remounted = sameIds.length && t.stoppedAt ? await mountedAgainSince(host, t.device, t.stoppedAt, policy.commandTimeoutMs) : false;
  const stopped = entries.filter((e) => superStopped(e.superOptions) || (t.stoppedMountIds.includes(e.id) && remounted !== true));
  const kubelet = entries.flatMap((e) => kubeletMountOf(policy.kubeletRoot, e) ?? []);
  // A pod not deleted by this job publishing the device while a stopped mount is still there (the
  // staging mount stayed): it was given the same stopped super block.
  const planned = (m: { id: number }): boolean => t.stoppedMountIds.includes(m.id) && remounted !== true;
  const newcomers = stopped.length ? kubelet.filter((m) => m.podUid && !t.deletedUids.includes(m.podUid) && !planned(m)) : [];
  if (newcomers.length) {
    const detail = newcomers.map((m) => m.mountPoint).join(', ');
    return {
      done: true,
      checks: [{ what: `remounted-before-unstage: a new pod got ${t.device}'s stopped file system before it was unstaged`, ok: false, detail }],
    };
  }
  const gone: Check = {
    what: `no stopped mount of ${t.device} (${t.majorMinor}) is left`,
    ok: stopped.length === 0,
    ...(stopped.length ? { detail: stopped.map((e) => `${e.mountPoint} (mount ${e.id}): ${e.superOptions.join(',')}`).join('; ') } : {}),
  };
  if (!gone.ok) return { done: false, checks: [gone] };
  if (!kubelet.length) return { done: true, checks: [gone, { what: `${t.device} is not mounted again yet (no pod on this node uses it now)`, ok: true }] };
  const rw: Check = {
    what: `${t.device} is mounted again with super options rw`,
    ok: kubelet.every((m) => m.superOptions.includes('rw')),
    detail: kubelet[0]?.superOptions.join(',') ?? '',
  };
  return { done: true, checks: [gone, rw, await fileSystemState(host, t.device, policy)] };
}

export async function verify(host: Host, targets: readonly VerifyTarget[], deps: VerifyDeps): Promise<Verification> {
  const deadline = deps.now() + deps.policy.verifyMs;
  const checks: Check[] = [];
  for (const t of targets) {
    let last = await look(host, t, deps.policy);
    while (!last.done && deps.now() < deadline) {
      await deps.sleep(deps.policy.verifyPollMs);
      last = await look(host, t, deps.policy);
    }
    checks.push(...last.checks);
  }
  return verification(checks);
}
