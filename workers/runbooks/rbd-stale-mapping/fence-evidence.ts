import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import { OUT_OF_SERVICE_TAINT, type StaleMappingFacts, type WatcherFact } from './facts.ts';

// The positive evidence a fence (`ceph osd blocklist add <addr>`) stands on, one item per fact
// the plan relies on (docs/safety.md, "rbd-stale-mapping"):
//   1. the client still watches the image (at observe time);
//   2. its address is a known node's, and only that one's, or lies in an operator-listed network;
//   3. that node may be fenced: out of service by its taint, or NotReady for the grace period
//      (a persistent claim: the engine parks the job until the grace has passed);
//   4. no pod on that node that uses the image's PVC may still run;
//   5. the client is not blocklisted already.
// A fact that could not be known is a `missing` item, which the plan turns into a refusal and
// the engine would refuse too. Every item is dated by the start of observe: it can only look
// older than it is, never fresher.

const RUNNING = new Set(['Running', 'Pending', 'Unknown']);

const watchSource = (f: StaleMappingFacts, w: WatcherFact): string =>
  w.seenBy
    .map((s) => (s === 'listwatchers' ? `rados -p ${f.pool} listwatchers ${f.imageInfo?.headerObject ?? '<header>'}` : `rbd status ${f.pool}/${f.image}`))
    .join(' and ');

/** The evidence of fencing `w` (role `not-ready-node` or `listed-network`). */
// long because: one evidence item per fencing interlock, in the order the plan and the operator read them
export function fenceEvidence(f: StaleMappingFacts, w: WatcherFact): StepEvidence[] {
  const spec = `${f.pool}/${f.image}`;
  const at = f.observedAt;
  const item = (claim: string, source: string, status: StepEvidence['status'], detail?: string, extra: Partial<StepEvidence> = {}): StepEvidence => ({
    claim,
    source,
    observedAt: at,
    status,
    ...(detail ? { detail } : {}),
    ...extra,
  });
  const items: StepEvidence[] = [item(`${w.address} (${w.client}) still watches ${spec}`, watchSource(f, w), 'holds', `cookie ${w.cookie}`)];

  if (!w.node) {
    items.push(
      w.network
        ? item(`${w.ip} is in ${w.network}, a network the operator allows fencing in, and no node lists it`, 'RBD_FENCE_CIDRS; Nodes status.addresses', 'holds')
        : item(
            `${w.ip} belongs to a node the cluster knows or to a network listed in RBD_FENCE_CIDRS`,
            'Nodes status.addresses; RBD_FENCE_CIDRS',
            'missing',
            `no node lists ${w.ip} and no listed network contains it`,
          ),
    );
  } else {
    const n = w.node;
    items.push(item(`${w.ip} is an address of node ${n.name}, and of no other node`, `Node ${n.name} status.addresses[type=${n.addressType}]`, 'holds'));

    // The node's state: the out-of-service taint is an operator's word that it is shut down;
    // otherwise it must have been NotReady for the grace. lastTransitionTime is the API server's
    // record of how long the condition has held, so one read of it is a measurement over time,
    // not one sample. A Ready node is never fenced, taint or not: the two contradict each other.
    if (n.outOfService && n.ready !== 'True') {
      items.push(
        item(
          `node ${n.name} is declared out of service (taint ${OUT_OF_SERVICE_TAINT}:${n.outOfService.effect})`,
          `Node ${n.name} spec.taints`,
          'holds',
          `Ready=${n.ready}${n.outOfService.timeAdded ? `; tainted at ${n.outOfService.timeAdded}` : ''}`,
        ),
      );
    } else if (n.ready === 'True') {
      items.push(
        item(
          `node ${n.name} is not Ready`,
          `Node ${n.name} status.conditions[type=Ready]`,
          'contradicted',
          `Ready=True${n.outOfService ? ` yet tainted ${OUT_OF_SERVICE_TAINT}: the kubelet posts status on a node declared shut down` : ''}`,
        ),
      );
    } else if (n.ready === 'absent' || !n.readySince) {
      items.push(
        item(
          `node ${n.name} has not been Ready for ${f.fenceNotReadySeconds} s`,
          `Node ${n.name} status.conditions[type=Ready].lastTransitionTime`,
          'missing',
          n.ready === 'absent' ? 'the Node reports no Ready condition' : `Ready=${n.ready}, but since when is not recorded`,
        ),
      );
    } else {
      items.push(
        item(
          `node ${n.name} has not been Ready for ${f.fenceNotReadySeconds} s`,
          `Node ${n.name} status.conditions[type=Ready].lastTransitionTime`,
          'holds',
          `Ready=${n.ready} since ${n.readySince}`,
          { persistence: { since: n.readySince, samples: 1, minSamples: 1, acrossBoot: false, mustHoldMs: f.fenceNotReadySeconds * 1000 } },
        ),
      );
    }

    const claim = f.volume?.claim;
    const live = w.podsOnNode.filter((p) => p.phase === undefined || RUNNING.has(p.phase));
    const pods = `Pods using PVC ${claim ? `${claim.namespace}/${claim.name}` : '?'} (spec.nodeName, status.phase)`;
    if (!claim) {
      items.push(
        item(
          `no pod on node ${n.name} that uses ${spec} may still run`,
          'PersistentVolumes (ceph-csi pool/imageName, in-tree rbd) and their claims',
          'missing',
          `no PersistentVolume with a bound PVC is known for ${spec}, so its pods cannot be found`,
        ),
      );
    } else if (live.length === 0) {
      items.push(
        item(
          `no pod on node ${n.name} that uses PVC ${claim.namespace}/${claim.name} may still run`,
          pods,
          'holds',
          w.podsOnNode.length ? `finished there: ${w.podsOnNode.map((p) => `${p.namespace}/${p.name} (${p.phase})`).join(', ')}` : 'none scheduled there',
        ),
      );
    } else if (n.outOfService || n.ready === 'Unknown') {
      // A node that stopped posting status (Unknown) or is declared shut down: the phases shown
      // are the last it reported, not what runs there now.
      const list = live.map((p) => `${p.namespace}/${p.name} (${p.phase ?? 'phase unknown'})`).join(', ');
      items.push(
        item(
          `the pods on node ${n.name} that use PVC ${claim.namespace}/${claim.name} are not known to run: ${list} show the last phase the node reported`,
          pods,
          'holds',
          n.outOfService
            ? 'the node is declared out of service; Kubernetes deletes its pods'
            : `the kubelet stopped posting status (Ready=Unknown since ${n.readySince ?? 'an unknown time'})`,
        ),
      );
    } else {
      // Ready=False is the kubelet's own report: it still posts status, so the phases are current.
      items.push(
        item(
          `no pod on node ${n.name} that uses PVC ${claim.namespace}/${claim.name} may still run`,
          pods,
          'contradicted',
          `${live.map((p) => `pod ${p.namespace}/${p.name} is ${p.phase ?? 'of unknown phase'}`).join(', ')} as reported by the kubelet of the node (Ready=False, still posting status)`,
        ),
      );
    }
  }

  items.push(item(`${w.address} is not blocklisted yet`, 'ceph osd blocklist ls', f.blocklisted.includes(w.address) ? 'contradicted' : 'holds'));
  return items;
}
