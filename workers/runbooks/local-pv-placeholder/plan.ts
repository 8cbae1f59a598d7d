import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import { planProblems } from '../../engine/judge-evidence.ts';
import type { Plan } from '../../engine/runbook.ts';
import { diskBackEvidence, operatorForceEvidence } from './disk-back.ts';
import type { PlaceholderFacts } from './facts.ts';
import type { PlaceholderRecord } from './record.ts';
import type { PlaceholderStep } from './step.ts';

// plan(facts) -> steps or refusal, with no I/O. Every "no" says why, in words an on-call
// engineer can act on.

/** The application recognises a 512-byte device as "not my disk" and drops it (docs/safety.md, "local-pv-placeholder"). */
export const PLACEHOLDER_BYTES = 512;
/** kubelet's own `losetup -f` takes the lowest free numbers; we stay out of its way. */
const FIRST_LOOP = 101;
/** The kernel's loop minor limit (MINORMASK). */
const LAST_LOOP = 1_048_575;

const LOOP_MAJOR = 7;

const refuse = (...reasons: string[]): Plan<PlaceholderStep> => ({ kind: 'refuse', reasons });
const nothing = (summary: string): Plan<PlaceholderStep> => ({ kind: 'nothing-to-do', summary });
const devOf = (loop: string): string => `/dev/${loop}`;
const minorOf = (loop: string): number => Number(loop.slice('loop'.length));

function attachedTo(f: PlaceholderFacts, loop: string): string | null | undefined {
  return f.attached.find((a) => a.loop === loop)?.backFile;
}

const isOurs = (f: PlaceholderFacts, backFile: string | null | undefined): boolean => backFile === f.image.seenByCommandsAs;

/** The lowest loop number >= FIRST_LOOP that is neither attached nor recorded for another PV. */
export function pickLoop(f: Pick<PlaceholderFacts, 'attached' | 'reservedLoops'>): string | null {
  const taken = new Set([...f.attached.map((a) => a.loop), ...f.reservedLoops]);
  for (let n = FIRST_LOOP; n <= LAST_LOOP; n++) if (!taken.has(`loop${n}`)) return `loop${n}`;
  return null;
}

// long because: one decision tree whose order is the safety argument (each branch a refusal naming its reason); split, the order would be spread over files
export function plan(f: PlaceholderFacts): Plan<PlaceholderStep> {
  if (f.ranOn !== f.node) return refuse(`the job is for node ${f.node} but ran on ${f.ranOn}`);
  if (f.recordUnreadable) return refuse(`the placeholder record of PV ${f.pv} exists but cannot be read: inspect it by hand before anything is changed`);
  if (f.record && f.record.path !== f.path) {
    return refuse(`PV ${f.pv} has a placeholder recorded for ${f.record.path}, not ${f.path}: release that one first`);
  }
  // The image is created, attached and deleted: only ever the file in STATE_DIR that we make. A
  // record naming another file (edited on disk) or a directory swapped for a symlink stops here.
  if (f.record && f.record.image !== f.image.path) {
    return refuse(
      `the placeholder record of PV ${f.pv} names the image ${f.record.image}, not ${f.image.path}: not touching either; inspect the record by hand`,
    );
  }
  if (f.image.outside) return refuse(`the placeholder image of PV ${f.pv} may not be touched: ${f.image.outside}`);
  if (f.action === 'release') {
    if (f.release.by === 'operator' && f.release.force) return planRelease(f, `release forced by an operator (${f.release.asked})`, [operatorForceEvidence(f)]);
    if (!f.record) return nothing(`release requested, but no placeholder is recorded for PV ${f.pv}`);
    const back = diskBackEvidence(f);
    const missing = planProblems(back, f.observedAt);
    if (missing.length) {
      return refuse(
        `the disk of PV ${f.pv} is not back, so its placeholder stays: ${missing.join('; ')}. ` +
          'If the disk was replaced or will not return, an operator can release it with force: POST /v1/placeholders/release',
      );
    }
    return planRelease(f, `the disk with WWN ${f.record.wwn} is back`, back);
  }

  if (!f.optIn.optedIn) {
    const seen = f.optIn.value === null ? 'absent' : `"${f.optIn.value}"`;
    return refuse(`node ${f.node} has not opted in to placeholders: label ${f.optIn.label} is required, it is ${seen}`);
  }
  if (f.wwn === null) {
    return refuse(
      `cannot tell the disk's WWN from ${f.path} (only wwn-0x..., scsi-3... and nvme-eui.... links), so cannot prove the disk is not present under another name`,
    );
  }
  const seenAs = f.sightings.map((s) => `${s.device} (${s.via})`).join(', ');

  if (f.record) {
    if (f.sightings.length > 0) {
      const back = diskBackEvidence(f);
      const missing = planProblems(back, f.observedAt);
      if (missing.length)
        return refuse(`a disk with WWN ${f.wwn} is seen (${seenAs}) but is not shown back: ${missing.join('; ')}; the placeholder stays until it is`);
      return planRelease(f, `the disk with WWN ${f.wwn} is back: ${seenAs}`, back);
    }
    const placedAt = new Set(f.record.disksAtPlacement);
    const newcomers = f.disksPresent.filter((w) => !placedAt.has(w));
    if (newcomers.length > 0) {
      return refuse(
        `the disk with WWN ${f.wwn} is still missing but a disk with a new WWN (${newcomers.join(', ')}) appeared since the placeholder was placed: ` +
          'the disk was probably replaced, so the PV must be recreated (a placeholder cannot stand in for a new disk); release the placeholder with force: POST /v1/placeholders/release',
      );
    }
    return planPlace(f, f.record);
  }

  switch (f.pathState.kind) {
    case 'not-a-link':
      return refuse(`${f.path} exists and is a ${f.pathState.type}, not a link: not touching it`);
    case 'link':
      if (f.pathState.resolvedType === 'block') return nothing(`${f.path} is present (-> ${f.pathState.resolvesTo}): nothing is missing`);
      return refuse(
        `${f.path} is a link to ${f.pathState.target}, which ${f.pathState.resolvedType === null ? 'does not exist' : `is a ${f.pathState.resolvedType}`}; ` +
          'it is not ours: remove it by hand if the disk is really gone',
      );
    case 'missing':
      break;
    default: {
      const never: never = f.pathState;
      return never;
    }
  }
  if (f.sightings.length > 0) {
    return refuse(`a disk with WWN ${f.wwn} is present as ${seenAs}: the disk did not vanish, only its link is missing (is udev running?)`);
  }
  const loop = pickLoop(f);
  if (!loop) return refuse(`no free loop device from loop${FIRST_LOOP} up`);
  return planPlace(f, {
    version: 1,
    pv: f.pv,
    path: f.path,
    wwn: f.wwn,
    loop,
    image: f.image.path,
    createdAt: f.observedAt,
    jobId: f.jobId,
    disksAtPlacement: f.disksPresent,
  });
}

function planPlace(f: PlaceholderFacts, recorded: PlaceholderRecord): Plan<PlaceholderStep> {
  // Someone else took our recorded loop device before we attached it: take another one.
  const backing = attachedTo(f, recorded.loop);
  const taken = backing !== undefined && !isOurs(f, backing);
  const loop = taken ? pickLoop({ attached: f.attached, reservedLoops: [...f.reservedLoops, recorded.loop] }) : recorded.loop;
  if (!loop) return refuse(`no free loop device from loop${FIRST_LOOP} up`);
  const record: PlaceholderRecord = { ...recorded, loop };
  const target = devOf(loop);

  const link = f.pathState;
  if (link.kind === 'not-a-link') return refuse(`${f.path} exists and is a ${link.type}, not a link: not touching it`);
  const ourOldLink = f.record ? devOf(f.record.loop) : null;
  if (link.kind === 'link' && link.target !== target && link.target !== ourOldLink) {
    return refuse(`${f.path} now points at ${link.target}, which we did not create: not replacing it`);
  }

  const inPlace =
    f.record !== null &&
    !taken &&
    isOurs(f, backing) &&
    f.image.size === PLACEHOLDER_BYTES &&
    link.kind === 'link' &&
    link.target === target &&
    link.resolvedType === 'block';
  if (inPlace) return nothing(`placeholder already in place: ${f.path} -> ${target} (${record.image})`);

  const steps: PlaceholderStep[] = [
    {
      kind: 'write-record',
      id: `write-record:${f.pv}:${loop}`,
      description: `record the placeholder of PV ${f.pv} (${loop})`,
      destructive: false,
      record,
    },
    {
      kind: 'create-image',
      id: `create-image:${f.pv}`,
      description: `create the ${PLACEHOLDER_BYTES}-byte image ${record.image}`,
      destructive: false,
      image: record.image,
      bytes: PLACEHOLDER_BYTES,
    },
    {
      kind: 'ensure-loop-node',
      id: `ensure-loop-node:${loop}`,
      description: `make sure ${target} exists as block device ${LOOP_MAJOR}:${minorOf(loop)}`,
      destructive: false,
      loop,
      minor: minorOf(loop),
    },
    {
      kind: 'attach-loop',
      id: `attach-loop:${loop}:${f.pv}`,
      description: `attach ${record.image} to ${target}`,
      destructive: false,
      loop,
      image: record.image,
    },
    {
      kind: 'point-link',
      id: `point-link:${f.path}:${loop}`,
      description: `point ${f.path} at ${target} (symlink to a temporary name, then rename)`,
      destructive: false,
      path: f.path,
      target,
      replaces: link.kind === 'link' ? link.target : null,
    },
  ];
  return { kind: 'steps', summary: `placeholder for PV ${f.pv}: ${f.path} -> ${target}, a ${PLACEHOLDER_BYTES}-byte loop device`, steps };
}

/**
 * A held device would stay attached after `losetup -d` (detached only at its last close) with
 * its image and record gone: nothing is changed until whatever holds it lets go. Force skips the
 * disk check, never this one; holders not read are not known to be none.
 */
function stillHeld(f: PlaceholderFacts, ours: readonly string[], why: string): Plan<PlaceholderStep> | undefined {
  if (f.holders === null) return refuse(`what holds the placeholder of PV ${f.pv} was not read, so it stays (${why}); ask for the release again`);
  const holders = f.holders;
  const held = ours.flatMap((loop) => (holders[loop] ?? []).map((h) => `${devOf(loop)}: ${h}`));
  if (held.length === 0) return undefined;
  return refuse(
    `the placeholder of PV ${f.pv} is still in use, so it stays (${why}): ${held.join('; ')}. ` +
      'Stop the pod that uses the PV (or unmount it), then ask for the release again',
  );
}

/** `basis`: what allows the release at all (the disk is back, or an operator forced it), on every destructive step. */
function planRelease(f: PlaceholderFacts, why: string, basis: StepEvidence[]): Plan<PlaceholderStep> {
  const r = f.record;
  if (!r) return nothing(`${why}, but no placeholder is recorded for PV ${f.pv}`);
  const target = devOf(r.loop);
  const notes: string[] = [];
  const steps: PlaceholderStep[] = [];
  const seen = (claim: string, source: string): StepEvidence[] => [...basis, { claim, source, observedAt: f.observedAt, status: 'holds' }];

  if (f.pathState.kind === 'link' && f.pathState.target === target) {
    steps.push({
      kind: 'remove-link',
      id: `remove-link:${f.path}:${r.loop}`,
      description: `remove ${f.path} (it points at our ${target})`,
      destructive: true,
      path: f.path,
      target,
      evidence: seen(`${f.path} points at our ${target}`, `readlink ${f.path}`),
    });
  } else {
    notes.push(`${f.path} does not point at ${target}: left as it is`);
  }
  // Every loop device backed by our image is ours; a recorded loop backed by anything else is not.
  const ours = f.attached.filter((a) => isOurs(f, a.backFile)).map((a) => a.loop);
  const stays = stillHeld(f, ours, why);
  if (stays) return stays;
  const backing = attachedTo(f, r.loop);
  if (backing !== undefined && !isOurs(f, backing)) notes.push(`${r.loop} is attached to ${backing ?? 'nothing'}, which we did not attach: not detaching it`);
  for (const loop of ours) {
    steps.push({
      kind: 'detach-loop',
      id: `detach-loop:${loop}:${f.pv}`,
      description: `detach ${devOf(loop)} (backed by our image)`,
      destructive: true,
      loop,
      image: r.image,
      evidence: [
        ...seen(`${devOf(loop)} is backed by our image ${f.image.seenByCommandsAs}`, 'losetup --list --json'),
        {
          claim: `nothing holds ${devOf(loop)}: no process has it open, nothing mounts it or is stacked on it`,
          source: `/proc/*/fd, /proc/*/mountinfo, /sys/block/${loop}/holders, losetup --list`,
          observedAt: f.observedAt,
          status: 'holds',
        },
      ],
    });
  }
  if (f.image.size !== null) {
    steps.push({
      kind: 'delete-image',
      id: `delete-image:${f.pv}`,
      description: `delete the image ${r.image}`,
      destructive: true,
      image: r.image,
      evidence: seen(`${r.image} is the image recorded for PV ${f.pv}`, `the placeholder record of PV ${f.pv}`),
    });
  }
  steps.push({
    kind: 'delete-record',
    id: `delete-record:${f.pv}`,
    description: `forget the placeholder of PV ${f.pv}`,
    destructive: false,
    pv: f.pv,
  });
  const udev = f.sightings.length > 0 ? '; if the by-id link does not come back by itself, run `udevadm trigger --action=add` for the disk' : '';
  return {
    kind: 'steps',
    summary: `release the placeholder of PV ${f.pv} (${why})${notes.length ? `; ${notes.join('; ')}` : ''}${udev}`,
    steps,
  };
}
