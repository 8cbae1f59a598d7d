import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import type { DeviceFacts, ReadonlyFacts } from './facts.ts';
import type { KernelFsLine } from './kernel-fs-lines.ts';
import { mountAskedReadOnly, superStopped } from './kubelet-mounts.ts';
import { isActivePath } from './observe-health.ts';

// The claims of docs/decisions/0008 §3.4 for one device, each a StepEvidence item the plan checks
// and the delete-pod step carries, and each a named reason when it does not hold
// (`<reason>: <what was seen>`). Only `paths-still-dead` and `device-unreadable` are reasons to
// wait rather than refuse: the device is expected back.

const ERROR_KINDS: ReadonlySet<KernelFsLine['kind']> = new Set([
  'ext4-error',
  'ext4-remount-ro',
  'journal-aborted',
  'buffer-io-error',
  'xfs-shutdown',
  'xfs-shut-down',
]);

export const WAIT_REASONS: ReadonlySet<string> = new Set(['paths-still-dead', 'device-unreadable']);

export interface Judged {
  item: StepEvidence;
  /** `<reason>: <seen>` when the claim does not hold. */
  refusal?: string;
}

function judged(f: ReadonlyFacts, reason: string, claim: string, source: string, holds: boolean, detail: string, status?: StepEvidence['status']): Judged {
  const item: StepEvidence = { claim, source, observedAt: f.observedAt, status: status ?? (holds ? 'holds' : 'fails'), detail };
  return item.status === 'holds' ? { item } : { item, refusal: `${reason}: ${detail}` };
}

/** The kernel's error lines for the device after its mount (a multipath map's path disks count as context only). */
export function errorLinesAfterMount(d: DeviceFacts): KernelFsLine[] {
  if (!d.kernel.ok) return [];
  const since = d.kernel.mountedAt;
  return d.kernel.lines.filter((l) => l.device === d.device && ERROR_KINDS.has(l.kind) && (since === null || (l.at ?? '') >= since));
}

export const isXfsShutdown = (d: DeviceFacts): boolean =>
  d.fsType === 'xfs' && errorLinesAfterMount(d).some((l) => l.kind === 'xfs-shutdown' || l.kind === 'xfs-shut-down');

/**
 * The kernel stopped this mount of the file system: its super options say ro or emergency_ro, or
 * (kernels that show neither: 6.1 keeps both option lists rw and answers writes with EROFS) the
 * kernel logged `Remounting filesystem read-only` for the device after this mount, or XFS shut down.
 */
export function stoppedClaim(f: ReadonlyFacts, d: DeviceFacts): Judged {
  const bySuper = d.mounts.filter((m) => superStopped(m.superOptions));
  const remount = errorLinesAfterMount(d)
    .filter((l) => l.kind === 'ext4-remount-ro')
    .at(-1);
  const xfs = isXfsShutdown(d);
  const options = d.mounts.length
    ? d.mounts.map((m) => `${m.mountPoint}: mount ${m.mountOptions[0] ?? '?'}, super ${m.superOptions.join(',')}`).join('; ')
    : 'no kubelet mount';
  const seen = [options, ...(remount ? [`${remount.at ?? '?'} ${remount.message}`] : [])].join('; ');
  return judged(
    f,
    'mount-not-readonly',
    `the kernel stopped the file system on ${d.device}: super options ro or emergency_ro, or its read-only remount logged after this mount${xfs ? ' (XFS: shut down)' : ''}`,
    '/proc/1/mountinfo, journalctl -k',
    d.mounts.length > 0 && (bySuper.length > 0 || remount !== undefined || xfs),
    seen,
  );
}

export function notRequestedClaim(f: ReadonlyFacts, d: DeviceFacts): Judged {
  const asked: string[] = [];
  for (const m of d.mounts) if (mountAskedReadOnly(m.mountOptions)) asked.push(`${m.mountPoint} is mounted ro`);
  for (const pv of d.pvs) if (pv.readOnly) asked.push(`PV ${pv.name} is read-only (spec.csi.readOnly or mountOptions ro)`);
  for (const p of d.pods) {
    const claims = d.pvs.flatMap((pv) => (pv.claim && p.pod && pv.claim.namespace === p.pod.namespace ? [pv.claim.name] : []));
    for (const c of claims) if (p.pod?.readOnlyClaims.includes(c)) asked.push(`pod ${p.pod.namespace}/${p.pod.name} uses claim ${c} read-only`);
  }
  return judged(
    f,
    'readonly-requested',
    `nobody asked for ${d.device} read-only (mounts, PV, pod)`,
    '/proc/1/mountinfo, persistentvolumes get, pods get',
    asked.length === 0,
    asked.join('; ') || 'mounts rw, PV and pods do not ask for read-only',
  );
}

export function kernelErrorClaim(f: ReadonlyFacts, d: DeviceFacts): Judged {
  const lines = errorLinesAfterMount(d);
  const s = d.sysfs;
  const sysfsSays = s.errorsCount !== null && s.errorsCount > 0;
  const claim = `the kernel reported an error for ${d.device} in this boot after its mount`;
  const source = 'journalctl -k, /sys/fs/ext4/<dev>/errors_count';
  if (!d.kernel.ok && s.errorsCount === null)
    return judged(f, 'kernel-log-unknown', claim, source, false, `${d.kernel.why}; /sys/fs/ext4/${d.device}/errors_count is absent`, 'missing');
  const last = lines.at(-1);
  const detail = [
    last ? `${last.at ?? '?'} ${last.message}` : d.kernel.ok ? 'no kernel line about it in this boot after its mount' : d.kernel.why,
    `errors_count ${s.errorsCount ?? 'absent'}`,
  ].join('; ');
  return judged(f, 'no-kernel-error-for-device', claim, source, lines.length > 0 || sysfsSays, detail);
}

export function systemClaim(f: ReadonlyFacts, d: DeviceFacts): Judged {
  return judged(
    f,
    'root-or-system-fs',
    `${d.device} is a PV's device, not the node's own`,
    '/proc/1/mountinfo',
    d.systemMounts.length === 0,
    d.systemMounts.length ? `also mounted at ${d.systemMounts.join(', ')}` : 'no system mount',
  );
}

export function pathsClaim(f: ReadonlyFacts, d: DeviceFacts): Judged {
  const h = d.health;
  if (h.kind === 'unknown') return judged(f, 'device-health-unknown', `the paths of ${d.device} are back`, 'multipath -ll', false, h.why, 'missing');
  if (h.kind === 'single')
    return judged(f, 'paths-still-dead', `${d.device} is not a multipath map: its read tells`, '/sys/block/<dev>/dm/uuid', true, 'no multipath map');
  const bad = h.paths.filter((p) => !isActivePath(p));
  const detail = h.paths.map((p) => `${p.dev ?? '-'} ${p.dmState} ${p.checkerState} ${p.onlineState ?? ''}`.trim()).join(', ') || 'no path';
  return judged(
    f,
    'paths-still-dead',
    `every path of ${h.map} (${d.device}) is active ready running`,
    `multipath -ll ${h.map}`,
    h.paths.length > 0 && bad.length === 0,
    detail,
  );
}

export function readableClaim(f: ReadonlyFacts, d: DeviceFacts, persistMs: number): Judged {
  const ok = d.probe.outcome === 'readable';
  const base = judged(
    f,
    'device-unreadable',
    `a direct read of ${d.device} answers, and has over time`,
    `dd iflag=direct (${d.probe.durationMs} ms)`,
    ok,
    d.probe.detail,
  );
  if (!ok || !d.healthySince) return base;
  // The claim that must persist: healthy since the first of this agent's sightings in this boot.
  const s = d.healthySince;
  return {
    item: {
      ...base.item,
      detail: `${d.probe.detail}; healthy since ${s.since}, ${s.samples} observation(s)`,
      persistence: { since: s.since, samples: s.samples, acrossBoot: false, mustHoldMs: persistMs, minSamples: 2 },
    },
  };
}
