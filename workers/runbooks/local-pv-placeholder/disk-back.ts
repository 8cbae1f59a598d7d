import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import type { PlaceholderFacts, Sighting } from './facts.ts';

// Is the real disk back? Before a placeholder is released on a detector's word, the
// node must show a block device that is not a loop device, with the recorded WWN (sysfs), and a
// /dev/disk/by-id link of that WWN leading to it (a node with that device's number). Anything less, and the placeholder stays: a
// released placeholder on a disk that is not back takes the device away from the pod it was
// placed for. An operator can still force a release (POST /v1/placeholders/release).

const LOOP = /\/loop[0-9]+$/;

export function diskBackEvidence(f: PlaceholderFacts): StepEvidence[] {
  const wwn = f.record?.wwn ?? f.wwn;
  const at = f.observedAt;
  if (wwn === null) {
    return [{ claim: 'the disk is back', source: f.path, observedAt: at, status: 'missing', detail: `cannot tell the disk's WWN from ${f.path}` }];
  }
  const inSysfs = f.sightings.filter((s) => s.via.startsWith('/sys/block/') && !LOOP.test(s.device));
  const links = f.sightings.filter((s) => !s.via.startsWith('/sys/block/'));
  // The PV's own path, once udev replaced our link with its own.
  const own: Sighting[] =
    f.pathState.kind === 'link' && f.pathState.resolvedType === 'block' && !LOOP.test(f.pathState.resolvesTo)
      ? [{ device: f.pathState.resolvesTo, via: f.path, dev: f.pathState.resolvedDev ?? null }]
      : [];
  // A link leads to the disk when the node it ends at IS the kernel's device: same name and the
  // same device number as sysfs says (a node named sdq can be anything mknod made it, a loop too).
  const kernelDev = (l: Sighting): Sighting | undefined => inSysfs.find((s) => s.device === l.device);
  const leadsToIt = (l: Sighting): boolean => {
    const k = kernelDev(l);
    return k !== undefined && typeof k.dev === 'string' && l.dev === k.dev;
  };
  const candidates = [...own, ...links];
  const linked = candidates.filter(leadsToIt);
  const impostors = candidates
    .filter((l) => kernelDev(l) && !leadsToIt(l))
    .map(
      (l) =>
        `${l.via} -> ${l.device}, but that node is ${l.dev ?? 'no block device'} and the kernel's ${l.device} is ${kernelDev(l)?.dev ?? 'of unknown number (no dev in sysfs)'}`,
    );
  const pathNow =
    f.pathState.kind === 'missing'
      ? `${f.path} is missing`
      : f.pathState.kind === 'link'
        ? `${f.path} points at ${f.pathState.target}${LOOP.test(f.pathState.resolvesTo) ? ' (a loop device: our placeholder)' : ''}`
        : `${f.path} is a ${f.pathState.type}`;
  return [
    {
      claim: `a block device with WWN ${wwn} is present, and it is not a loop device`,
      source: '/sys/block/*/device/wwid, /sys/block/*/dm/uuid',
      observedAt: at,
      status: inSysfs.length ? 'holds' : 'fails',
      detail: inSysfs.length ? inSysfs.map((s) => s.device).join(', ') : `no block device with WWN ${wwn}`,
    },
    {
      claim: `a /dev/disk/by-id link of WWN ${wwn} leads to it`,
      source: '/dev/disk/by-id',
      observedAt: at,
      status: linked.length ? 'holds' : 'fails',
      detail: linked.length ? linked.map((l) => `${l.via} -> ${l.device} (${l.dev})`).join(', ') : [...impostors, pathNow].join('; '),
    },
  ];
}

/** The evidence of a forced release: an operator's word, named as such. */
export function operatorForceEvidence(f: PlaceholderFacts): StepEvidence {
  return {
    claim: 'an operator forced the release without the disk check',
    source: 'the job (POST /v1/placeholders/release, force: true)',
    observedAt: f.observedAt,
    status: 'holds',
    detail: f.release.asked,
  };
}
