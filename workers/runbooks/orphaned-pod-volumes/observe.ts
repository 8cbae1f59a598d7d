import { posix } from 'node:path';
import type { OrphanedPodVolumesJob } from '../../../src/core/catalogue/jobs.ts';
import { isPodUid } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import type { Known, OrphanFacts, UidFacts, VolData } from './facts.ts';
import { holdersOfTree, kubeletActive, listDir, loopsOfTree, mountsOfTree, readMounts, readTree, runtimeUids, statPath, type MountView } from './node-reads.ts';
import type { OrphanKube } from './orphan-kube.ts';
import { recordSightings } from './sightings.ts';
import { readVolData, stagingPaths, volDataVolume } from './vol-data.ts';

// Observe (docs/decisions/0008 §2.3): the candidates are the job's UID, or every UID-named
// directory in pods/. For each: its tree (host mount namespace), whether the API server or the
// runtime knows it, every mount at or under it in every mount namespace, holders, loop devices,
// and its CSI volumes' metadata and staging. Then one sighting is counted for those that look
// orphaned (unknown to both), so a later look can tell an orphan from a pod being torn down.

export interface ObserveDeps {
  kube: OrphanKube;
  stateDir: string;
  kubeletRoot: string;
  minAgeMs: number;
  ranOn: string;
  now: () => Date;
}

async function known<T>(f: () => Promise<T>): Promise<Known<T>> {
  try {
    return { known: true, value: await f() };
  } catch (err) {
    return { known: false, why: (err as Error).message };
  }
}

async function volumesOf(host: Host, dir: string, tree: UidFacts['tree'], kubeletRoot: string, view: MountView): Promise<VolData[]> {
  if (!tree.known) return [];
  const out: VolData[] = [];
  for (const e of tree.value) {
    const volume = volDataVolume(e.rel);
    if (volume === null || e.type !== 'file') continue;
    const read = await readVolData(host, posix.join(dir, e.rel));
    const parsed = typeof read === 'string' ? null : read;
    const staging = parsed ? stagingPaths(kubeletRoot, parsed) : [];
    const stagedAt = parsed ? view.mounts.filter((m) => staging.includes(m.entry.mountPoint)).map((m) => `${m.entry.mountPoint} (${m.namespace})`) : null;
    out.push({ volume, rel: e.rel, size: e.size, parsed, ...(typeof read === 'string' ? { problem: read } : {}), stagedAt });
  }
  return out;
}

export async function observe(job: OrphanedPodVolumesJob, host: Host, deps: ObserveDeps): Promise<OrphanFacts> {
  const observedAt = deps.now().toISOString();
  const podsDir = posix.join(deps.kubeletRoot, 'pods');
  const podsStat = await known(() => statPath(host, podsDir));
  const podsDev: Known<string> = !podsStat.known
    ? podsStat
    : podsStat.value?.type === 'directory'
      ? { known: true, value: podsStat.value.dev }
      : { known: false, why: podsStat.value ? `${podsDir} is a ${podsStat.value.type}, not a directory` : `${podsDir} does not exist` };
  const base = {
    node: job.target.node,
    ranOn: deps.ranOn,
    observedAt,
    kubeletRoot: deps.kubeletRoot,
    podsDir,
    podsDev,
    minAgeMs: deps.minAgeMs,
    ...(job.target.podUid ? { requestedUid: job.target.podUid } : {}),
  };
  const kubelet = await kubeletActive(host);
  const attachedPvs = await known(() => deps.kube.attachedPvs(job.target.node));
  if (!podsDev.known) return { ...base, kubeletActive: kubelet, attachedPvs, unreadableMountinfo: [], candidates: [] };

  let uids: string[];
  if (job.target.podUid) uids = [job.target.podUid];
  else {
    const listed = await listDir(host, podsDir);
    if (!listed.known)
      return { ...base, podsDev: { known: false, why: listed.why }, kubeletActive: kubelet, attachedPvs, unreadableMountinfo: [], candidates: [] };
    uids = listed.value.filter(isPodUid).sort();
  }
  const api = await known(() => deps.kube.podsByUid());
  const runtime = await runtimeUids(host);
  const view = await readMounts(host, podsDir);
  const candidates: UidFacts[] = [];
  for (const uid of uids) {
    const dir = posix.join(podsDir, uid);
    if ((await statPath(host, dir)) === null) continue;
    const tree = await readTree(host, dir);
    candidates.push({
      uid,
      dir,
      tree,
      apiPod: api.known ? { known: true, value: api.value[uid] ?? null } : api,
      inRuntime: runtime.known ? { known: true, value: runtime.value.includes(uid) } : runtime,
      mounts: await mountsOfTree(host, view, dir),
      holders: await holdersOfTree(host, dir),
      loops: await loopsOfTree(host, dir),
      volData: await volumesOf(host, dir, tree, deps.kubeletRoot, view),
      sighting: null,
    });
  }
  const orphans = candidates.filter((c) => c.apiPod.known && c.apiPod.value === null && c.inRuntime.known && !c.inRuntime.value).map((c) => c.uid);
  const sightings = await recordSightings(host, deps.stateDir, orphans, observedAt, !job.target.podUid);
  for (const c of candidates) {
    const s = sightings[c.uid];
    if (s && orphans.includes(c.uid)) c.sighting = { since: s.since, samples: s.samples };
  }
  return { ...base, kubeletActive: kubelet, attachedPvs, unreadableMountinfo: view.unreadable, candidates };
}
