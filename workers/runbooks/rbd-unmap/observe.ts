import { posix } from 'node:path';
import type { RbdUnmapJob } from '../../../src/core/catalogue/jobs.ts';
import { TransientError } from '../../../src/core/errors.ts';
import type { Host } from '../../host/host.ts';
import { expectOk } from '../../host/command-failed.ts';
import { devPath } from '../../host/paths.ts';
import type { MappedDevice, UnmapFacts } from './facts.ts';
import { scanHolders } from './holders.ts';
import { mayRun, type NodePods } from './node-pods.ts';
import type { UnmapPolicy } from './policy.ts';
import { parseShowmappedJson, SHOWMAPPED, type Mapping } from './showmapped.ts';
import { sysfsMappings } from './sysfs-mappings.ts';
import { isMissingCommand } from '../../host/missing-command.ts';

export interface ObserveDeps {
  pods: NodePods;
  policy: UnmapPolicy;
  ranOn: string;
  now: () => Date;
}

const SYSFS_MAPPINGS_SOURCE = '/sys/bus/rbd/devices/<id>/{pool,pool_ns,name,current_snap}';

/** `rbd showmapped`, or the kernel's sysfs record when the node has no rbd CLI; and which it was. */
async function readMappings(host: Host): Promise<{ mappings: Mapping[]; source: string }> {
  const r = await host.run(SHOWMAPPED);
  if (isMissingCommand(r)) return { mappings: await sysfsMappings(host), source: SYSFS_MAPPINGS_SOURCE };
  return { mappings: parseShowmappedJson(expectOk(r).stdout), source: SHOWMAPPED.join(' ') };
}

export async function listMappings(host: Host): Promise<Mapping[]> {
  return (await readMappings(host)).mappings;
}

export const headMappings = (all: readonly Mapping[], pool: string, image: string): Mapping[] =>
  all.filter((m) => m.pool === pool && m.image === image && m.namespace === '' && m.snap === '-');

async function majorMinorOf(host: Host, device: string): Promise<string | null> {
  const info = await host.lstat(devPath(device, 'rbd'));
  return info?.type === 'block' && info.major !== undefined && info.minor !== undefined ? `${info.major}:${info.minor}` : null;
}

export async function observe(job: RbdUnmapJob, host: Host, deps: ObserveDeps): Promise<UnmapFacts> {
  const { node, pool, image, watcher } = job.target;
  // The start of observing dates every fact: evidence can only look older than it is.
  const observedAt = deps.now().toISOString();
  const listed = await readMappings(host);
  const mappings = headMappings(listed.mappings, pool, image);
  const link = await host.readlink(`/dev/rbd/${pool}/${image}`);

  let pods: Awaited<ReturnType<typeof deps.pods.podsOnNode>>;
  try {
    pods = (await deps.pods.podsOnNode(node)).filter(mayRun);
  } catch (err) {
    throw new TransientError(`cannot list the pods of node ${node}: ${(err as Error).message}`);
  }
  const claim = job.claim;
  const claimUsersHere = claim
    ? pods
        .filter((p) => p.namespace === claim.namespace && p.claims.includes(claim.name))
        .map((p) => ({ namespace: p.namespace, name: p.name, ...(p.uid ? { uid: p.uid } : {}), ...(p.phase ? { phase: p.phase } : {}) }))
    : [];

  const mapped: MappedDevice[] = [];
  for (const m of mappings) {
    const majorMinor = await majorMinorOf(host, m.device);
    const clientAddr = /^[0-9]+$/.test(m.id) ? (await host.readFile(`/sys/bus/rbd/devices/${m.id}/client_addr`))?.trim() || null : null;
    mapped.push({ ...m, majorMinor, clientAddr, holders: await scanHolders(host, m.device, majorMinor) });
  }
  return {
    node,
    ranOn: deps.ranOn,
    pool,
    image,
    watcher,
    observedAt,
    mappingsSource: listed.source,
    mapped,
    byPoolLink: link === null ? null : posix.basename(link),
    claimUsersHere,
    runningPodUids: pods.flatMap((p) => (p.uid ? [p.uid] : [])),
    podsWithoutUid: pods.filter((p) => !p.uid).map((p) => `${p.namespace}/${p.name}`),
    claimKnown: claim !== undefined,
    ...(claim ? { claim: { namespace: claim.namespace, name: claim.name } } : {}),
    policy: { force: deps.policy.force, kubeletRoot: deps.policy.kubeletRoot },
  };
}
