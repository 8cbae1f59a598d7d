import type { RbdStaleMappingJob } from '../../../src/core/catalogue/jobs.ts';
import { cidrContaining } from '../../../src/core/catalogue/cidr.ts';
import type { NamespacedName, NodeInfo, PodInfo } from '../../../src/adapters/kube/lookups.ts';
import { TransientError } from '../../../src/core/errors.ts';
import type { Host } from '../../host/host.ts';
import { blocklist, listWatchers, rbdInfo, rbdStatus } from './ceph-commands.ts';
import { OUT_OF_SERVICE_TAINT, type PodUse, type StaleMappingFacts, type WatcherFact, type WatcherNode, type WatcherRole } from './facts.ts';
import type { RbdLookups } from './rbd-lookups.ts';
import type { StaleMappingPolicy } from './policy.ts';
import type { Watcher } from './watchers.ts';

export interface ObserveDeps {
  lookups: RbdLookups;
  policy: StaleMappingPolicy;
  jobKey: string;
  now: () => Date;
}

async function ask<T>(what: string, q: () => Promise<T>): Promise<T> {
  try {
    return await q();
  } catch (err) {
    throw new TransientError(`Kubernetes lookup failed (${what}): ${(err as Error).message}`);
  }
}

/** Union of both listings by address; a watcher seen by only one is still a watcher. */
function merge(a: readonly Watcher[], b: readonly Watcher[]): Array<Watcher & { seenBy: WatcherFact['seenBy'] }> {
  const byAddress = new Map<string, Watcher & { seenBy: WatcherFact['seenBy'] }>();
  for (const w of a) byAddress.set(w.address, { ...w, seenBy: ['listwatchers'] });
  for (const w of b) {
    const seen = byAddress.get(w.address);
    if (seen) seen.seenBy.push('status');
    else byAddress.set(w.address, { ...w, seenBy: ['status'] });
  }
  return [...byAddress.values()];
}

const isZero = (v: number | string | undefined): boolean => v === 0 || v === '0' || v === '0%';

/** What fencing decides on about the one node that lists the watcher's IP. */
function watcherNode(node: NodeInfo, ip: string): WatcherNode {
  const oos = node.taints?.find((t) => t.key === OUT_OF_SERVICE_TAINT);
  return {
    name: node.name,
    ready: node.ready ?? 'absent',
    ...(node.readySince ? { readySince: node.readySince } : {}),
    ...(oos
      ? {
          outOfService: {
            effect: oos.effect,
            ...(oos.value ? { value: oos.value } : {}),
            ...(oos.timeAdded ? { timeAdded: oos.timeAdded } : {}),
          },
        }
      : {}),
    addressType: node.addresses.find((a) => a.address === ip)?.type ?? 'unknown',
  };
}

// long because: the reads in the order the facts depend on each other (the mapping, its watchers, the node, the blocklist)
export async function observe(job: RbdStaleMappingJob, host: Host, deps: ObserveDeps): Promise<StaleMappingFacts> {
  const { pool, image } = job.target;
  const base = {
    pool,
    image,
    jobKey: deps.jobKey,
    observedAt: deps.now().toISOString(),
    fencing: deps.policy.fencing,
    blocklistExpirySeconds: deps.policy.blocklistExpirySeconds,
    fenceNotReadySeconds: deps.policy.fenceNotReadySeconds,
  };
  const info = await rbdInfo(host, pool, image);
  if ('missing' in info) {
    return {
      ...base,
      imageInfo: null,
      imageError: info.missing,
      watchers: [],
      unparsedWatchers: [],
      requester: {},
      volume: null,
      advice: null,
      blocklisted: [],
    };
  }
  const fromRados = await listWatchers(host, pool, info.headerObject);
  const fromStatus = await rbdStatus(host, pool, image);
  const fenced = (await blocklist(host)).map((e) => e.addr);

  const pv = await ask('PV of the image', () => deps.lookups.volumeOfImage(pool, image));
  const claim = pv ? await ask('PVC of the PV', () => deps.lookups.claimOfVolume(pv.name)) : undefined;
  const pods: PodInfo[] = pv ? await ask('pods using the PV', () => deps.lookups.podsUsingVolume(pv.name)) : [];
  const requesterPod = job.target.pod;
  const requesterNode =
    job.target.node ?? (requesterPod ? pods.find((p) => p.namespace === requesterPod.namespace && p.name === requesterPod.name)?.node : undefined);

  const watchers: WatcherFact[] = [];
  for (const w of merge(fromRados.watchers, fromStatus.watchers)) {
    const nodes = await ask(`nodes with address ${w.ip}`, () => deps.lookups.nodesByAddress(w.ip));
    const node = nodes.length === 1 ? nodes[0]! : undefined;
    let role: WatcherRole;
    let network: string | undefined;
    if (nodes.length > 1) role = 'ambiguous-address';
    else if (!node) {
      network = cidrContaining(w.ip, deps.policy.fenceCidrs);
      role = network ? 'listed-network' : 'unknown-address';
    } else if (node.name === requesterNode) role = 'requester';
    else role = node.ready === 'True' ? 'ready-node' : 'not-ready-node';
    const podsOnNode: PodUse[] = node
      ? pods
          .filter((p) => p.node === node.name)
          .map((p) => ({
            namespace: p.namespace,
            name: p.name,
            ...(p.node ? { node: p.node } : {}),
            ...(p.phase ? { phase: p.phase } : {}),
          }))
      : [];
    watchers.push({
      ...w,
      node: node ? watcherNode(node, w.ip) : null,
      role,
      podsOnNode,
      ...(nodes.length > 1 ? { nodesWithAddress: nodes.map((n) => n.name) } : {}),
      ...(network ? { network } : {}),
    });
  }

  // Prevention: an RWO claim in a Deployment that surges starts the new pod before the old one
  // let go of the image, which is exactly this failure.
  let advice: string | null = null;
  const adviceOf: NamespacedName | undefined = requesterPod ?? pods.find((p) => p.controller?.kind === 'ReplicaSet');
  if (claim?.accessModes.includes('ReadWriteOnce') && adviceOf) {
    const dep = await ask('Deployment of the pod', () => deps.lookups.deploymentOfPod(adviceOf));
    if (dep && dep.strategy === 'RollingUpdate' && !isZero(dep.maxSurge)) {
      advice =
        `Deployment ${dep.namespace}/${dep.name} uses the ReadWriteOnce PVC ${claim.namespace}/${claim.name} with strategy RollingUpdate and maxSurge ${dep.maxSurge ?? '25% (default)'}: ` +
        'a rollout starts the new pod while the old one still holds the image, so this will happen again; use strategy Recreate (or maxSurge 0 with maxUnavailable 1)';
    }
  }

  return {
    ...base,
    imageInfo: { id: info.id, format: info.format, headerObject: info.headerObject },
    watchers,
    unparsedWatchers: [...fromRados.unparsed, ...fromStatus.unparsed],
    requester: { ...(requesterPod ? { pod: requesterPod } : {}), ...(requesterNode ? { node: requesterNode } : {}) },
    volume: pv
      ? {
          pv: pv.name,
          ...(claim ? { claim: { namespace: claim.namespace, name: claim.name } } : {}),
          accessModes: claim?.accessModes ?? pv.accessModes ?? [],
        }
      : null,
    advice,
    blocklisted: fenced,
  };
}
