import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import type { Classified, HolderClass } from './classify.ts';
import type { MappedDevice, UnmapFacts } from './facts.ts';
import type { MountHolder } from './holders.ts';

// The positive evidence the node half's destructive steps (umount of a stale kubelet mount,
// rbd unmap) stand on (docs/safety.md, "rbd-unmap"), built from what observe saw:
//   - the device is the kernel's mapping of this pool/image (showmapped or sysfs, cross-checked
//     with the /dev/rbd/<pool>/<image> link);
//   - the holder scan saw the host (/proc/1/ns/mnt readable) and knows the device's number;
//   - no pod that may run on this node uses the PVC, and every such pod has a uid (mounts are
//     told apart by pod uid);
//   - no kernel device and nothing live or foreign holds it;
//   - per umount: the mount is kubelet's, of a pod that does not run here (or the global mount
//     no running pod needs); per forced unmap: the rest are leftovers of pods gone from here.
// Claims the plan refuses on when they are false (a pod uses the PVC, a live holder, a kernel
// holder) are only added when they hold: their refusal has its own words. The others are
// `missing` or `contradicted` when they cannot be shown, and the plan refuses on them.

const HOLDERS_SOURCE = '/proc/*/task/*/mountinfo, /proc/*/fd, /proc/<pid>/cgroup';

type Item = (claim: string, source: string, status: StepEvidence['status'], detail?: string) => StepEvidence;

const itemAt =
  (at: string): Item =>
  (claim, source, status, detail) => ({ claim, source, observedAt: at, status, ...(detail ? { detail } : {}) });

function counts(c: Classified): string {
  const by = new Map<HolderClass, number>();
  for (const h of [...c.mounts, ...c.openers]) by.set(h.class, (by.get(h.class) ?? 0) + 1);
  return by.size ? [...by].map(([k, n]) => `${n} ${k}`).join(', ') : 'no mounts, no openers';
}

/** What every destructive step on device `m` relies on. */
export function deviceEvidence(f: UnmapFacts, m: MappedDevice, c: Classified): StepEvidence[] {
  const item = itemAt(f.observedAt);
  const dev = `/dev/${m.device}`;
  const spec = `${f.pool}/${f.image}`;
  const pods = `Pods on node ${f.node} (spec.nodeName, status.phase, volumes)`;
  const items: StepEvidence[] = [];

  // The udev link names the last device mapped for the image: one that names a device not
  // listed for it contradicts the listing.
  const linkOk = f.byPoolLink === null || f.mapped.some((x) => x.device === f.byPoolLink);
  items.push(
    item(
      `${dev} is the kernel's mapping of ${spec} (image head, id ${m.id})`,
      f.mappingsSource,
      linkOk ? 'holds' : 'contradicted',
      f.byPoolLink === null ? `no /dev/rbd/${spec} link to cross-check` : `/dev/rbd/${spec} -> ${f.byPoolLink}`,
    ),
  );

  items.push(
    m.holders.hostNamespace !== null
      ? item(
          `the holder scan saw the host's mounts and processes`,
          `/proc/1/ns/mnt, ${HOLDERS_SOURCE}`,
          'holds',
          `host mount namespace ${m.holders.hostNamespace}`,
        )
      : item(
          `the holder scan saw the host's mounts and processes`,
          '/proc/1/ns/mnt',
          'missing',
          "cannot read /proc/1/ns/mnt: the agent does not see the host's processes (hostPID, the host's /proc)",
        ),
  );
  items.push(
    m.majorMinor !== null
      ? item(`${dev} is a block device ${m.majorMinor}, so its mounts are found under any name`, `lstat ${dev}`, 'holds')
      : item(
          `${dev} is a block device whose number is known`,
          `lstat ${dev}`,
          'missing',
          `${dev} is not a block device node here: a mount of it under another name could be missed`,
        ),
  );

  if (!f.claim) {
    items.push(item(`no pod that may run on node ${f.node} uses the PVC of ${spec}`, pods, 'missing', 'the job names no PVC'));
  } else if (f.claimUsersHere.length === 0) {
    items.push(item(`no pod that may run on node ${f.node} (Pending, Running, Unknown) uses PVC ${f.claim.namespace}/${f.claim.name}`, pods, 'holds'));
  }
  items.push(
    f.podsWithoutUid.length === 0
      ? item(
          `every pod that may run on node ${f.node} is known by uid, so its mounts are told from stale ones`,
          pods,
          'holds',
          `${f.runningPodUids.length} pod(s)`,
        )
      : item(
          `every pod that may run on node ${f.node} is known by uid, so its mounts are told from stale ones`,
          pods,
          'missing',
          `no uid: ${f.podsWithoutUid.join(', ')}`,
        ),
  );

  if (m.holders.kernel.length === 0) items.push(item(`no kernel device (dm, md) holds ${dev}`, `/sys/block/${m.device}/holders`, 'holds'));
  const all = [...c.mounts, ...c.openers];
  if (!all.some((h) => h.class === 'live' || h.class === 'foreign')) {
    items.push(
      item(
        `nothing live or foreign holds ${dev}: its mounts and openers belong to pods that no longer run on node ${f.node}`,
        `${HOLDERS_SOURCE}; ${pods}`,
        'holds',
        counts(c),
      ),
    );
  }
  return items;
}

/** Why `s` (a host-namespace mount classified stale) may be unmounted. */
export function staleMountEvidence(f: UnmapFacts, m: MappedDevice, s: MountHolder, podUid: string | null): StepEvidence {
  const item = itemAt(f.observedAt);
  const source = `/proc/1/mountinfo; Pods on node ${f.node}`;
  return podUid !== null
    ? item(
        `${s.mountPoint} is kubelet's mount of /dev/${m.device} for pod ${podUid}, which does not run on node ${f.node}`,
        source,
        'holds',
        `${s.fsType} on ${s.source}`,
      )
    : item(
        `${s.mountPoint} is kubelet's global mount of /dev/${m.device}, and no pod that may run on node ${f.node} mounts it or uses the PVC`,
        source,
        'holds',
        `${s.fsType} on ${s.source}`,
      );
}

/** Why a forced unmap may get past what still holds the device: only leftovers of gone pods. */
export function leftoverEvidence(f: UnmapFacts, m: MappedDevice, leftovers: readonly string[]): StepEvidence {
  return itemAt(f.observedAt)(
    `what else holds /dev/${m.device} is left over from pods that no longer run on node ${f.node}`,
    `${HOLDERS_SOURCE}; Pods on node ${f.node}`,
    'holds',
    leftovers.join('; '),
  );
}
