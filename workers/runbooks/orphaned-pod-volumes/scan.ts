import { posix } from 'node:path';
import type { OrphanedPodVolumesJob } from '../../../src/core/catalogue/jobs.ts';
import { idempotencyKey } from '../../../src/core/catalogue/idempotency-keys.ts';
import { isPodUid } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import { runtimeUids } from './node-reads.ts';
import type { OrphanKube } from './orphan-kube.ts';
import { recordSightings } from './sightings.ts';

// The node agent's own look at kubelet's pods/ (every ORPHAN_SCAN_SECONDS): the UID-named
// directories that neither the API server nor the runtime knows are counted as sightings; one
// seen in two scans ORPHAN_MIN_AGE_SECONDS apart becomes a job. kubelet's log line names only the
// first orphan of its sweep, so this scan is what finds the rest. It only looks: the job decides.

export interface OrphanScanOptions {
  node: string;
  host: Host;
  stateDir: string;
  kube: OrphanKube;
  kubeletRoot: string;
  minAgeMs: number;
  now: () => Date;
}

export type OrphanScan = { jobs: OrphanedPodVolumesJob[]; orphans: string[] } | { skipped: string };

/** `%y\t%f\0` records of pods/' entries: the UID-named directories. */
function podDirs(stdout: string): string[] {
  if (stdout !== '' && !stdout.endsWith('\0')) return [];
  return stdout
    .split('\0')
    .filter((r) => r !== '')
    .flatMap((r) => {
      const [type, name = ''] = r.split('\t');
      return type === 'd' && isPodUid(name) ? [name] : [];
    });
}

export async function orphanScan(o: OrphanScanOptions): Promise<OrphanScan> {
  const pods = posix.join(o.kubeletRoot, 'pods');
  const r = await o.host.run(['find', '-P', o.host.argPath(pods), '-mindepth', '1', '-maxdepth', '1', '-printf', '%y\\t%f\\0'], { timeoutMs: 30_000 });
  if (r.exitCode !== 0) return { skipped: `cannot list ${pods}: ${r.stderr.trim().slice(0, 200) || `exit ${r.exitCode ?? r.signal}`}` };
  const dirs = podDirs(r.stdout);
  let api: Readonly<Record<string, string>>;
  try {
    api = await o.kube.podsByUid();
  } catch (err) {
    return { skipped: `the API server's pods are unknown: ${(err as Error).message}` };
  }
  const runtime = await runtimeUids(o.host);
  if (!runtime.known) return { skipped: `the runtime's sandboxes are unknown: ${runtime.why}` };
  const orphans = dirs.filter((uid) => api[uid] === undefined && !runtime.value.includes(uid));
  const now = o.now();
  const sightings = await recordSightings(o.host, o.stateDir, orphans, now.toISOString(), true);
  const jobs: OrphanedPodVolumesJob[] = [];
  for (const uid of orphans) {
    const s = sightings[uid];
    if (!s || s.samples < 2 || now.getTime() - Date.parse(s.since) < o.minAgeMs) continue;
    jobs.push({
      version: 1,
      runbook: 'orphaned-pod-volumes',
      // The key triage gives kubelet's line about the same UID: NPD's job and ours fold.
      key: idempotencyKey('orphaned-pod-volumes', [o.node, uid]),
      target: { node: o.node, podUid: uid },
      evidence: [
        {
          source: 'agent',
          summary: `${pods}/${uid} belongs to no pod the API server or the runtime knows, seen in ${s.samples} scans since ${s.since}`,
          raw: { podUid: uid, since: s.since, samples: s.samples },
        },
      ],
    });
  }
  return { jobs, orphans };
}
