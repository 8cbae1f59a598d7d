import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import { DEVICE_PATTERNS } from '../../../src/core/catalogue/names.ts';
import { isAttached } from './attached-volumes.ts';
import type { AttachmentFacts, MapFacts, Opener, OrphanDisk, ResidualFacts } from './facts.ts';
import type { IntentRecord } from './intents.ts';
import { isDeadPath } from './multipath-ll.ts';
import { describeOpener, openerRole } from './openers.ts';
import type { ResidualPolicy } from './policy.ts';
import { normalizeWwid, wwidConflicts } from './wwid.ts';

// The positive evidence each destructive step of this runbook stands on, built from
// the facts: one item per interlock of docs/safety.md, each naming the command or file it comes
// from. The plan leaves a map alone when any item is not positive, with the items' own words as
// the reasons, and the same items ride on the steps for the engine to judge again.

export type EvidenceContext = Pick<ResidualFacts, 'node' | 'observedAt' | 'attachments' | 'mountNamespaces' | 'mode'>;

const devList = (m: MapFacts): string[] => m.paths.map((p) => p.dev).filter((d): d is string => d !== null);
const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && [...a].sort().join() === [...b].sort().join();

function item(
  ctx: EvidenceContext,
  claim: string,
  source: string,
  ok: boolean,
  detail?: string,
  status: StepEvidence['status'] = ok ? 'holds' : 'fails',
): StepEvidence {
  return { claim, source, observedAt: ctx.observedAt, status, ...(detail ? { detail } : {}) };
}

function attachmentEvidence(ctx: EvidenceContext, wwid: string, policy: Pick<ResidualPolicy, 'attachmentsUnknown'>): StepEvidence {
  const claim = `no VolumeAttachment of node ${ctx.node} claims WWID ${wwid}`;
  const a: AttachmentFacts = ctx.attachments;
  if (!a.known) {
    if (policy.attachmentsUnknown === 'proceed') {
      return item(
        ctx,
        `the operator allows acting without knowing the VolumeAttachments (RESIDUAL_ATTACHMENTS_UNKNOWN=proceed)`,
        'configuration',
        true,
        `unknown: ${a.why}`,
      );
    }
    return item(ctx, claim, 'VolumeAttachments (Kubernetes API)', false, a.why, 'missing');
  }
  return item(
    ctx,
    claim,
    'VolumeAttachments (Kubernetes API)',
    !isAttached(a.wwids, wwid),
    isAttached(a.wwids, wwid) ? 'it is attached to this node' : undefined,
  );
}

/** Openers of the map or its disks that are not victims, described. */
function liveUsers(openers: readonly Opener[], victims: readonly string[]): string[] {
  return openers.filter((o) => openerRole(o, victims).kind === 'user').map(describeOpener);
}

function openerEvidence(ctx: EvidenceContext, what: string, openers: readonly Opener[], policy: Pick<ResidualPolicy, 'victimOpeners'>): StepEvidence {
  const users = liveUsers(openers, policy.victimOpeners);
  const victims = openers.filter((o) => openerRole(o, policy.victimOpeners).kind === 'victim').map(describeOpener);
  return item(
    ctx,
    `every process with ${what} open is a known victim of the dead paths`,
    '/proc/*/fd, /proc/*/stat, /proc/*/cgroup',
    users.length === 0,
    users.length ? `live user(s): ${users.join(', ')}` : victims.length ? `victims: ${victims.join(', ')}` : 'no opener',
  );
}

function mountEvidence(ctx: EvidenceContext, what: string, mounts: MapFacts['mounts']): StepEvidence {
  return item(
    ctx,
    `nothing mounts ${what}`,
    `/proc/*/mountinfo (${ctx.mountNamespaces} mount namespace(s))`,
    mounts.length === 0,
    mounts.length
      ? mounts.map((mt) => `mounted at ${mt.mountPoint} (${mt.how}, pids ${mt.pids.join(',')}${mt.pids.length >= 5 ? ',...' : ''})`).join('; ')
      : undefined,
  );
}

/**
 * Everything but the read probe and the open count: what observe checks before it probes a map
 * (a probe of a held map could only leave one more process in D state).
 */
// long because: one evidence item per interlock of a dead map, in the order the plan and the operator read them
export function cheapEvidence(m: MapFacts, ctx: EvidenceContext, policy: Pick<ResidualPolicy, 'attachmentsUnknown' | 'victimOpeners'>): StepEvidence[] {
  const out: StepEvidence[] = [];
  const dead = m.paths.length > 0 && m.paths.every(isDeadPath);
  const paths = m.paths.map((p) => `${p.dev ?? '-'} ${p.dmState} ${p.checkerState}${p.onlineState ? ` ${p.onlineState}` : ''}`).join(', ');
  out.push(item(ctx, `every path of ${m.name} is dead`, 'multipath -ll', dead, paths || 'no paths listed'));
  out.push(
    item(
      ctx,
      `the state of ${m.name} reads unambiguously`,
      'multipath -ll, multipathd show maps json, sysfs',
      m.problems.length === 0,
      m.problems.join('; ') || undefined,
      m.problems.length ? 'contradicted' : 'holds',
    ),
  );
  const dmKnown = m.dm !== null && DEVICE_PATTERNS.dm.test(m.dm);
  const uuidOk = m.dmUuid !== null && m.dmUuid.startsWith('mpath-') && normalizeWwid(m.dmUuid) === normalizeWwid(m.wwid);
  out.push(
    item(
      ctx,
      `${m.dm ?? 'its dm device'} is the multipath map of WWID ${m.wwid}`,
      `/sys/block/${m.dm ?? 'dm-?'}/dm/uuid`,
      dmKnown && uuidOk,
      dmKnown ? `uuid ${m.dmUuid ?? 'unknown'}` : 'its dm device is not known',
      !dmKnown || m.dmUuid === null ? 'missing' : uuidOk ? 'holds' : 'contradicted',
    ),
  );
  const devs = devList(m);
  const badNames = devs.filter((d) => !DEVICE_PATTERNS.scsi.test(d));
  const wrongWwid = m.paths.filter((p) => p.dev && wwidConflicts(p.sysfsWwid, m.wwid)).map((p) => `${p.dev} reports ${p.sysfsWwid}`);
  const pathsAgree = badNames.length === 0 && same(devs, m.slaves) && wrongWwid.length === 0;
  out.push(
    item(
      ctx,
      `its paths [${devs.join(', ')}] are SCSI disks of WWID ${m.wwid} and sysfs agrees`,
      `/sys/block/${m.dm ?? 'dm-?'}/slaves, /sys/block/sdX/device/wwid`,
      pathsAgree,
      pathsAgree
        ? undefined
        : [
            badNames.length ? `not SCSI disk names we act on: ${badNames.join(', ')}` : '',
            same(devs, m.slaves) ? '' : `sysfs slaves are [${m.slaves.join(', ')}]`,
            ...wrongWwid,
          ]
            .filter(Boolean)
            .join('; '),
      pathsAgree ? 'holds' : 'contradicted',
    ),
  );
  out.push(attachmentEvidence(ctx, m.wwid, policy));
  out.push(
    item(
      ctx,
      `no partition, LVM, md or dm device sits on ${m.dm ?? m.name}`,
      `/sys/block/${m.dm ?? 'dm-?'}/holders`,
      m.holders.length === 0,
      m.holders.length ? `held by ${m.holders.join(', ')}` : undefined,
    ),
  );
  out.push(
    item(
      ctx,
      `no loop device is backed by ${m.name}`,
      '/sys/block/loop*/loop/backing_file',
      m.loopBacked.length === 0,
      m.loopBacked.length ? `backing ${m.loopBacked.join(', ')}` : undefined,
    ),
  );
  out.push(
    item(
      ctx,
      `no iSCSI/LIO target exports ${m.name}`,
      '/sys/kernel/config/target/core/*/*/udev_path',
      m.exportedBy.length === 0,
      m.exportedBy.length ? `exported by ${m.exportedBy.join(', ')}` : undefined,
    ),
  );
  out.push(mountEvidence(ctx, `${m.name} or its disks`, m.mounts));
  out.push(item(ctx, `${m.name} is not swap`, '/proc/swaps', !m.swap));
  out.push(openerEvidence(ctx, `${m.name} or its disks`, [...m.openers, ...m.diskOpeners], policy));
  return out;
}

/** The read probe and the open count: only meaningful after the probes ran. */
export function probeEvidence(m: MapFacts, ctx: EvidenceContext, policy: Pick<ResidualPolicy, 'victimOpeners'>): StepEvidence[] {
  const out: StepEvidence[] = [];
  const victimFds = m.openers.filter((o) => openerRole(o, policy.victimOpeners).kind === 'victim').reduce((n, o) => n + o.fds, 0);
  const userFds = m.openers.filter((o) => openerRole(o, policy.victimOpeners).kind === 'user').reduce((n, o) => n + o.fds, 0);
  // Only the map's own open count is known here; openers of its disks add to no dm count.
  if (m.openCount === null)
    out.push(
      item(
        ctx,
        `every open of ${m.dm ?? m.name} belongs to a known victim`,
        'dmsetup info -c',
        false,
        'dmsetup info did not list the map: its open count is unknown',
        'missing',
      ),
    );
  else if (userFds === 0) {
    out.push(
      item(
        ctx,
        `every open of ${m.dm ?? m.name} belongs to a known victim`,
        'dmsetup info -c',
        m.openCount <= victimFds,
        m.openCount <= victimFds
          ? `open count ${m.openCount}, victims hold ${victimFds}`
          : `open count ${m.openCount} but victims hold only ${victimFds}: something else (a kernel user, an unseen process) holds it`,
      ),
    );
  }
  const claim = `a direct read of ${m.dm ?? m.name} fails or hangs`;
  const source = 'dd iflag=direct with a hard deadline';
  switch (m.probe.outcome) {
    case 'io-error':
    case 'timed-out':
      out.push(item(ctx, claim, source, true, `${m.probe.outcome}: ${m.probe.detail}`));
      break;
    case 'readable':
      out.push(item(ctx, claim, source, false, 'the read probe succeeded: the map still reads'));
      break;
    case 'not-run':
      out.push(item(ctx, claim, source, false, m.probe.detail, 'missing'));
      break;
    case 'skipped-dry-run':
      // Dry-run only: no item, so the plan shows what enforce would do if its probe fails;
      // enforce always probes, and refuses a map that reads. Never a pass in enforce.
      if (ctx.mode !== 'dry-run') out.push(item(ctx, claim, source, false, m.probe.detail, 'missing'));
      break;
    default: {
      const never: never = m.probe.outcome;
      return never;
    }
  }
  return out;
}

/** The claim release-queued-io adds: the map stayed dead long enough, over more than one look (or a reboot). */
export function persistenceEvidence(m: MapFacts, ctx: EvidenceContext, policy: Pick<ResidualPolicy, 'allDeadGraceMs'>, stateFile: string): StepEvidence {
  const d = m.deadSince;
  if (!d) return item(ctx, `every path of ${m.name} stayed dead over time`, stateFile, false, 'no sighting recorded', 'missing');
  return {
    ...item(
      ctx,
      `every path of ${m.name} stayed dead over time`,
      `this agent's observations (${stateFile})`,
      true,
      `dead since ${d.since}, ${d.samples} observation(s)${d.acrossBoot ? ', and across a reboot' : ''}`,
    ),
    persistence: { since: d.since, samples: d.samples, acrossBoot: d.acrossBoot, mustHoldMs: policy.allDeadGraceMs, minSamples: 2 },
  };
}

/** Evidence for deleting a disk an interrupted sequence left behind after its map was flushed. */
export function orphanEvidence(
  record: IntentRecord,
  disk: OrphanDisk,
  f: ResidualFacts,
  policy: Pick<ResidualPolicy, 'attachmentsUnknown' | 'victimOpeners'>,
  recordPath: string,
): StepEvidence[] {
  const meant = record.disks.find((d) => d.name === disk.name);
  const identityOk = disk.wwid !== null && !wwidConflicts(disk.wwid, record.wwid) && (meant?.hctl ?? null) === disk.hctl;
  return [
    item(
      f,
      `an intent record of job ${record.jobId} (${record.createdAt}) names ${disk.name} (${meant?.hctl ?? '?'}, WWID ${record.wwid}) as a path of ${record.map}`,
      recordPath,
      meant !== undefined,
    ),
    item(
      f,
      `the record is from this boot (disk names and H:C:T:L are per boot)`,
      '/proc/sys/kernel/random/boot_id',
      record.bootId !== null && record.bootId === f.bootId,
      `record ${record.bootId ?? 'unknown'}, now ${f.bootId ?? 'unknown'}`,
      record.bootId === null || f.bootId === null ? 'missing' : undefined,
    ),
    item(f, `the map of WWID ${record.wwid} is gone`, 'multipath -ll, /sys/block/dm-*/dm/uuid', true),
    item(
      f,
      `${disk.name} is still ${meant?.hctl ?? '?'} with WWID ${record.wwid}`,
      `/sys/block/${disk.name}/device`,
      identityOk,
      `now ${disk.hctl ?? '?'} ${disk.wwid ?? '?'}`,
    ),
    item(
      f,
      `nothing holds ${disk.name} (no new map claims it)`,
      `/sys/block/${disk.name}/holders`,
      disk.holders.length === 0,
      disk.holders.length ? `held by ${disk.holders.join(', ')}` : undefined,
    ),
    attachmentEvidence(f, record.wwid, policy),
    mountEvidence(f, disk.name, disk.mounts),
    openerEvidence(f, disk.name, disk.openers, policy),
  ];
}
