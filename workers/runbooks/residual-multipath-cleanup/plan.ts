import type { Plan } from '../../engine/runbook.ts';
import { DEVICE_PATTERNS } from '../../../src/catalogue/names.ts';
import { isAttached } from './attached-volumes.ts';
import type { MapFacts, ResidualFacts } from './facts.ts';
import { isDeadPath } from './multipath-ll.ts';
import { normalizeWwid, wwidConflicts } from './wwid.ts';
import type { ResidualPolicy } from './policy.ts';
import type { ResidualStep } from './step.ts';

// plan(facts, policy): which maps are residual (DESIGN class 1, issue 5), with no I/O. A map is
// cleaned only when every interlock holds; every other map is listed with the reasons it was
// left alone. A map with one path that is not dead is healthy and is never touched.

export type Verdict =
  /** Has a path that is not dead: a working (or recovering) map. */
  | { kind: 'healthy'; why: string }
  /** Every path is dead but an interlock holds it: a human must look. */
  | { kind: 'held'; reasons: string[] }
  | { kind: 'residual'; releaseQueuedIo: boolean };

export interface Assessment {
  map: string;
  wwid: string;
  dm: string | null;
  paths: string[];
  verdict: Verdict;
}

export type ResidualPlan = Plan<ResidualStep> & { assessments: Assessment[]; notes: string[] };

const devList = (m: MapFacts): string[] => m.paths.map((p) => p.dev).filter((d): d is string => d !== null);
const pathText = (m: MapFacts): string =>
  m.paths.map((p) => `${p.dev ?? '-'} ${p.dmState} ${p.checkerState}${p.onlineState ? ` ${p.onlineState}` : ''}`).join(', ');
const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

/** Why a map whose paths are all dead must still be left alone (empty: it is residual). */
export function interlocks(m: MapFacts, f: ResidualFacts): string[] {
  const r: string[] = [];
  if (m.problems.length) r.push(`its state could not be read unambiguously: ${m.problems.join('; ')}`);
  if (m.dm === null || !DEVICE_PATTERNS.dm.test(m.dm)) r.push('its dm device is not known');
  if (m.dmUuid === null || normalizeWwid(m.dmUuid) !== normalizeWwid(m.wwid) || !m.dmUuid.startsWith('mpath-')) r.push(`its dm uuid is ${m.dmUuid ?? 'unknown'}, not mpath-${m.wwid}`);
  for (const d of devList(m)) if (!DEVICE_PATTERNS.scsi.test(d)) r.push(`path ${d} is not a SCSI disk name we act on`);
  if (!same(devList(m), m.slaves)) r.push(`multipath lists paths [${devList(m).join(', ')}] but sysfs slaves are [${m.slaves.join(', ')}]`);
  for (const p of m.paths) {
    if (p.dev && wwidConflicts(p.sysfsWwid, m.wwid)) r.push(`path ${p.dev} reports WWID ${p.sysfsWwid}, not the map's ${m.wwid}`);
  }
  if (f.attachments.known && isAttached(f.attachments.wwids, m.wwid)) {
    r.push(`a VolumeAttachment of node ${f.node} still claims WWID ${m.wwid}`);
  }
  if (m.holders.length) r.push(`held by ${m.holders.join(', ')} (/sys/block/${m.dm}/holders)`);
  for (const mt of m.mounts) r.push(`mounted at ${mt.mountPoint} (${mt.how}, pids ${mt.pids.join(',')}${mt.pids.length >= 5 ? ',...' : ''})`);
  if (m.swap) r.push('in use as swap (/proc/swaps)');
  const users = m.openers.filter((o) => o.state !== 'D');
  for (const u of users) r.push(`open by pid ${u.pid} (${u.comm}, state ${u.state}), which is not stuck on queued I/O: a real user`);
  const stuckFds = m.openers.filter((o) => o.state === 'D').reduce((n, o) => n + o.fds, 0);
  if (m.openCount === null) r.push('its open count is unknown (dmsetup info did not list it)');
  else if (m.openCount > stuckFds && users.length === 0) {
    r.push(`dm open count is ${m.openCount} but only ${stuckFds} open(s) belong to processes stuck on its queued I/O: something else (a kernel user, a loop device, an unseen process) holds it`);
  }
  switch (m.probe.outcome) {
    case 'readable':
      r.push('the read probe succeeded: the map still reads');
      break;
    case 'not-run':
      r.push(`no read probe result (${m.probe.detail})`);
      break;
    case 'io-error':
    case 'timed-out':
      break;
    case 'skipped-dry-run':
      // Only in dry-run: the plan shows what enforce would do if its probe fails (it refuses
      // the map when the probe reads). Not a pass in enforce, where observe always probes.
      if (f.mode !== 'dry-run') r.push(`no read probe result (${m.probe.detail})`);
      break;
    default: {
      const never: never = m.probe.outcome;
      return never;
    }
  }
  return r;
}

export function assess(m: MapFacts, f: ResidualFacts, policy: ResidualPolicy): Verdict {
  const live = m.paths.filter((p) => !isDeadPath(p));
  if (live.length > 0) return { kind: 'healthy', why: `${live.length} of ${m.paths.length} path(s) not dead: ${pathText(m)}` };
  const reasons = interlocks(m, f);
  const release = m.queueIfNoPath || (m.openCount ?? 0) > 0;
  if (reasons.length === 0 && release && policy.releaseQueuedIo === 'require-approval') {
    reasons.push(`releasing its queued I/O (dmsetup message ${m.name} 0 fail_if_no_path) is needed and requires approval by policy`);
  }
  return reasons.length ? { kind: 'held', reasons } : { kind: 'residual', releaseQueuedIo: release };
}

function stepsFor(m: MapFacts, releaseQueuedIo: boolean): ResidualStep[] {
  const dm = m.dm as string;
  const steps: ResidualStep[] = [];
  if (releaseQueuedIo) {
    const stuck = m.openers.map((o) => `${o.pid} (${o.comm})`).join(', ');
    steps.push({
      kind: 'release-queued-io',
      id: `release-queued-io:${m.wwid}`,
      description: `dmsetup message ${m.name} 0 fail_if_no_path: fail the I/O queued on ${dm} so stuck openers let go${stuck ? ` (${stuck})` : ''}`,
      destructive: true,
      highRisk: true,
      map: m.name,
      wwid: m.wwid,
      dm,
    });
  }
  steps.push({
    kind: 'flush-map',
    id: `flush-map:${m.wwid}`,
    description: `multipath -f ${m.name} (${dm}, WWID ${m.wwid}) once its open count is 0`,
    destructive: true,
    map: m.name,
    wwid: m.wwid,
    dm,
    paths: devList(m),
    links: m.byIdLinks,
  });
  for (const p of m.paths) {
    if (!p.dev) continue;
    steps.push({
      kind: 'delete-disk',
      id: `delete-disk:${p.dev}:${p.hctl ?? 'unknown'}:${m.wwid}`,
      description: `echo 1 > /sys/block/${p.dev}/device/delete (${p.hctl ?? 'no H:C:T:L'}, a dead path of ${m.name})`,
      destructive: true,
      disk: p.dev,
      hctl: p.hctl,
      wwid: m.wwid,
      map: m.name,
    });
  }
  return steps;
}

const describe = (a: Assessment): string => {
  switch (a.verdict.kind) {
    case 'healthy':
      return `${a.map} (${a.dm ?? '?'}) left alone: healthy, ${a.verdict.why}`;
    case 'held':
      return `${a.map} (${a.dm ?? '?'}) left alone although every path is dead: ${a.verdict.reasons.join('; ')}`;
    case 'residual':
      return `${a.map} (${a.dm ?? '?'}) is residual`;
    default: {
      const never: never = a.verdict;
      return never;
    }
  }
};

export function plan(f: ResidualFacts, policy: ResidualPolicy): ResidualPlan {
  const notes: string[] = [];
  const refuse = (...reasons: string[]): ResidualPlan => ({ kind: 'refuse', reasons, assessments: [], notes });
  if (f.ranOn !== f.node) return refuse(`the job is for node ${f.node} but ran on ${f.ranOn}`);
  if (!f.listing.ok) {
    if (/sysfs shows no multipath map/.test(f.listing.why) && f.maps.length === 0) {
      return { kind: 'nothing-to-do', summary: `no multipath maps on ${f.node} (${f.listing.why})`, assessments: [], notes };
    }
    return refuse(`cannot list multipath maps: ${f.listing.why}`);
  }
  if (!f.attachments.known) {
    if (policy.attachmentsUnknown === 'refuse') return refuse(`${f.attachments.why}, and policy requires the VolumeAttachment check`);
    notes.push(`VolumeAttachment check skipped: ${f.attachments.why}`);
  }
  if (f.unreadableMountinfo.length) notes.push(`mountinfo of ${f.unreadableMountinfo.length} process(es) could not be read (exited while we looked?)`);

  const assessments: Assessment[] = f.maps.map((m) => ({ map: m.name, wwid: m.wwid, dm: m.dm, paths: devList(m), verdict: assess(m, f, policy) }));
  const residual = f.maps.filter((_, i) => assessments[i]?.verdict.kind === 'residual');
  const leftAlone = assessments.filter((a) => a.verdict.kind !== 'residual');
  const held = leftAlone.filter((a) => a.verdict.kind === 'held');
  const stuck = f.maps.flatMap((m) => m.probe.stuckPids.map((pid) => `${pid} (probe of ${m.dm})`));
  if (stuck.length) notes.push(`probe processes stuck in D state after SIGKILL: ${stuck.join(', ')}`);
  const tail = [...leftAlone.map(describe), ...notes].join('; ');

  if (residual.length > policy.maxMapsPerJob) {
    return {
      kind: 'refuse',
      reasons: [`${residual.length} maps look residual (${residual.map((m) => m.name).join(', ')}), more than the ${policy.maxMapsPerJob} one job may remove: a human must confirm this is not a storage outage`],
      assessments,
      notes,
    };
  }
  if (residual.length === 0) {
    if (held.length > 0) return { kind: 'refuse', reasons: held.map(describe), assessments, notes };
    return { kind: 'nothing-to-do', summary: f.maps.length ? `no residual multipath maps: ${tail}` : 'no multipath maps', assessments, notes };
  }
  const steps = residual.flatMap((m) => {
    const v = assessments.find((a) => a.wwid === m.wwid)?.verdict;
    return stepsFor(m, v?.kind === 'residual' && v.releaseQueuedIo);
  });
  const cleaned = residual.map((m) => `${m.name} (${m.dm}, ${devList(m).join('+') || 'no disks'})`).join(', ');
  return { kind: 'steps', summary: `remove residual map(s) ${cleaned}${tail ? `; ${tail}` : ''}`, steps, assessments, notes };
}
