import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import type { OrphanFacts, TreeMount, UidFacts, VolData } from './facts.ts';
import type { TreeEntry } from './pod-tree.ts';
import { volDataVolume, VOL_DATA_MAX_BYTES } from './vol-data.ts';

// The claims of docs/decisions/0008 §2.4, one StepEvidence each, with the refusal reason that
// names it when it does not hold. The plan leaves a UID alone when any of its claims is not
// positive (the reasons say why, `<kebab-reason>: <what was seen>`), and the same items ride on
// its steps for the engine to judge again right before each one.

export interface Claim {
  evidence: StepEvidence;
  /** Set when the claim does not hold (fails, missing, contradicted). */
  reason?: string;
}

const NAMED = 10;
const list = (xs: readonly string[]): string => `${xs.slice(0, NAMED).join(', ')}${xs.length > NAMED ? ` and ${xs.length - NAMED} more` : ''}`;

function claim(f: Pick<OrphanFacts, 'observedAt'>, reason: string, text: string, source: string, status: StepEvidence['status'], detail?: string): Claim {
  const evidence: StepEvidence = { claim: text, source, observedAt: f.observedAt, status, ...(detail ? { detail: detail.slice(0, 1000) } : {}) };
  return status === 'holds' ? { evidence } : { evidence, reason: `${reason}: ${detail ?? text}` };
}

export function describeMount(m: TreeMount): string {
  const who = m.pids.map((p) => `pid ${p.pid} (${p.comm}${p.podUid ? `, pod ${p.podUid}` : ''})`).join(', ');
  const ns = m.host ? `the host's mount namespace` : `mount namespace ${m.namespace}`;
  return m.how === 'at-or-under'
    ? `${m.mountPoint} is a mount point in ${ns}: ${who || 'no pid seen'}`
    : `${m.mountPoint} in ${ns} is a bind of ${m.root} (${m.majorMinor}): ${who || 'no pid seen'}`;
}

/** An entry kubelet itself leaves or removes (docs/decisions/0008 §2.4 entry-not-ours). */
function isKubeletEntry(e: TreeEntry): boolean {
  if (e.type === 'dir') return true;
  if (e.type !== 'file') return false;
  return volDataVolume(e.rel) !== null || e.rel === 'etc-hosts' || /^containers\/[^/]+\/[^/]+$/.test(e.rel) || e.rel.startsWith('plugins/');
}

const isBlockVolumeEntry = (e: TreeEntry): boolean => e.rel.startsWith('volumeDevices/');

/** The claims about one pod directory that decide whether any of it may go. */
export function uidClaims(f: OrphanFacts, u: UidFacts): Claim[] {
  const api = u.apiPod.known
    ? claim(
        f,
        'pod-known-to-api',
        `no pod with UID ${u.uid} exists (any namespace, any node)`,
        'pods list, all namespaces (Kubernetes API)',
        u.apiPod.value === null ? 'holds' : 'fails',
        u.apiPod.value ? `pod ${u.apiPod.value} has UID ${u.uid}` : undefined,
      )
    : claim(
        f,
        'pod-api-unknown',
        `no pod with UID ${u.uid} exists (any namespace, any node)`,
        'pods list, all namespaces (Kubernetes API)',
        'missing',
        u.apiPod.why,
      );
  const rt = u.inRuntime.known
    ? claim(
        f,
        'pod-known-to-runtime',
        `the container runtime has no pod sandbox of UID ${u.uid}`,
        'crictl pods -o json',
        u.inRuntime.value ? 'fails' : 'holds',
        u.inRuntime.value ? `a sandbox of pod ${u.uid} is listed` : undefined,
      )
    : claim(f, 'runtime-unknown', `the container runtime has no pod sandbox of UID ${u.uid}`, 'crictl pods -o json', 'missing', u.inRuntime.why);
  const at = u.mounts.filter((m) => m.how === 'at-or-under');
  const binds = u.mounts.filter((m) => m.how === 'source-under');
  const unreadable = f.unreadableMountinfo.length
    ? ` (mountinfo of pid(s) ${list(f.unreadableMountinfo.map(String))} could not be read: gone while scanning)`
    : '';
  const claims: Claim[] = [
    api,
    rt,
    claim(
      f,
      'mounted-in-namespace',
      `nothing is mounted at or under ${u.dir} in any mount namespace`,
      '/proc/*/mountinfo',
      at.length ? 'fails' : 'holds',
      at.length ? list(at.map(describeMount)) : unreadable || undefined,
    ),
    claim(
      f,
      'bind-source-under-tree',
      `no mount anywhere shows a subtree of ${u.dir}`,
      '/proc/*/mountinfo (root field)',
      binds.length ? 'fails' : 'holds',
      binds.length ? list(binds.map(describeMount)) : undefined,
    ),
    claim(
      f,
      'held-by-process',
      `no process has its cwd, root or an open file under ${u.dir}`,
      '/proc/*/{cwd,root,fd/*}',
      u.holders.length ? 'fails' : 'holds',
      u.holders.length ? list(u.holders.map((h) => `pid ${h.pid} (${h.comm}) ${h.link} -> ${h.target}`)) : undefined,
    ),
    claim(
      f,
      'loop-backed-by-file',
      `no loop device is backed by a file under ${u.dir}`,
      '/sys/block/loop*/loop/backing_file',
      u.loops.length ? 'fails' : 'holds',
      u.loops.length ? list(u.loops) : undefined,
    ),
  ];
  return [...claims, ...treeClaims(f, u)];
}

/** The claims about what the pod directory holds (find's listing and kubelet's vol_data.json). */
function treeClaims(f: OrphanFacts, u: UidFacts): Claim[] {
  const claims: Claim[] = [];
  if (!u.tree.known) {
    claims.push(claim(f, 'pod-tree-unreadable', `every entry under ${u.dir} was listed`, 'find -P -printf (host mount namespace)', 'missing', u.tree.why));
    return claims;
  }
  const entries = u.tree.value;
  const foreign = entries.filter((e) => !isKubeletEntry(e) && !isBlockVolumeEntry(e));
  const devs = f.podsDev.known ? entries.filter((e) => e.dev !== (f.podsDev.known ? f.podsDev.value : '')) : [];
  const block = entries.filter(isBlockVolumeEntry);
  const badVol = u.volData.filter((v) => v.parsed === null || v.size > VOL_DATA_MAX_BYTES || v.parsed.nodeName !== f.node);
  const where = 'find -P -printf (host mount namespace)';
  claims.push(
    claim(
      f,
      'entry-not-ours',
      `${u.dir} holds only directories and the files kubelet writes`,
      where,
      foreign.length ? 'fails' : 'holds',
      foreign.length ? list(foreign.map((e) => `${e.rel} (${e.type}, ${e.size} bytes)`)) : undefined,
    ),
    claim(
      f,
      'crosses-filesystem',
      `every entry under ${u.dir} is on the file system of ${f.podsDir}`,
      `${where}, stat %d of ${f.podsDir}`,
      devs.length ? 'fails' : 'holds',
      devs.length ? list(devs.map((e) => `${e.rel || '.'} (st_dev ${e.dev})`)) : undefined,
    ),
    claim(
      f,
      'block-volume-left',
      `nothing is left under ${u.dir}/volumeDevices`,
      where,
      block.length ? 'fails' : 'holds',
      block.length ? list(block.map((e) => `${e.rel} (${e.type})`)) : undefined,
    ),
    claim(
      f,
      'vol-data-unreadable',
      `every vol_data.json under ${u.dir} is kubelet's, for node ${f.node}`,
      'cat vol_data.json (host mount namespace)',
      badVol.length ? 'fails' : 'holds',
      badVol.length ? list(badVol.map(describeBadVolData(f.node))) : undefined,
    ),
  );
  return claims;
}

const describeBadVolData =
  (node: string) =>
  (v: VolData): string =>
    `${v.rel}: ${v.problem ?? (v.size > VOL_DATA_MAX_BYTES ? `${v.size} bytes` : `nodeName ${v.parsed?.nodeName} is not ${node}`)}`;

/** The volume is not staged on the node and no VolumeAttachment of the node names it (PR #102576). */
export function unstagedClaim(f: OrphanFacts, v: VolData): Claim {
  const text = `volume ${v.volume} is not staged on node ${f.node} and no VolumeAttachment of the node names it`;
  const source = '/proc/*/mountinfo (globalmount), VolumeAttachments (Kubernetes API)';
  if (!f.attachedPvs.known) return claim(f, 'volume-still-staged', text, source, 'missing', `the VolumeAttachments are unknown: ${f.attachedPvs.why}`);
  if (v.stagedAt === null) return claim(f, 'volume-still-staged', text, source, 'missing', `${v.rel} could not be read`);
  const attached = f.attachedPvs.value.includes(v.parsed?.specVolID ?? v.volume);
  if (v.stagedAt.length || attached) {
    const seen = [
      ...v.stagedAt.map((s) => `staged at ${s}`),
      ...(attached ? [`a VolumeAttachment of ${f.node} names ${v.parsed?.specVolID ?? v.volume}`] : []),
    ];
    return claim(f, 'volume-still-staged', text, source, 'fails', seen.join('; '));
  }
  return claim(f, 'volume-still-staged', text, source, 'holds');
}

/** orphan-too-young: seen in two looks ORPHAN_MIN_AGE_SECONDS apart, or the step waits (never refused). */
export function persistenceClaim(f: OrphanFacts, u: UidFacts): Claim {
  const text = `pod directory ${u.uid} has been an orphan for ${Math.round(f.minAgeMs / 1000)} s over two looks`;
  const source = "this agent's sightings (orphan scan and jobs)";
  if (!u.sighting) return claim(f, 'orphan-too-young', text, source, 'missing', 'not seen as an orphan before');
  return {
    evidence: {
      claim: text,
      source,
      observedAt: f.observedAt,
      status: 'holds',
      detail: `first seen ${u.sighting.since}, ${u.sighting.samples} look(s)`,
      persistence: { since: u.sighting.since, samples: u.sighting.samples, acrossBoot: false, mustHoldMs: f.minAgeMs, minSamples: 2 },
    },
  };
}
