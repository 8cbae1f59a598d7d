import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import type { Plan } from '../../engine/runbook.ts';
import {
  errorLinesAfterMount,
  isXfsShutdown,
  type Judged,
  kernelErrorClaim,
  notRequestedClaim,
  pathsClaim,
  readableClaim,
  stoppedClaim,
  systemClaim,
} from './evidence.ts';
import type { DeviceFacts, PodFacts, ReadonlyFacts } from './facts.ts';
import type { ReadonlyPolicy } from './policy.ts';
import { deletePodStepId, type ReadonlyStep } from './step.ts';

// Pure: facts in, a plan out (docs/decisions/0008 §3.4, §3.5). Every claim is a named reason when it
// does not hold. A device the kernel did not stop is nothing to do; any other failed claim refuses
// the job (`paths-still-dead` and `device-unreadable` are refusals the handler turns into a wait:
// the device is expected back). The delete-pod step carries every claim as its evidence, the
// healthy-over-time one with its persistence, so the engine waits until the device has been back
// for READONLY_PATHS_BACK_SECONDS over two observations before it asks for approval.

export type ReadonlyPlan = Plan<ReadonlyStep>;

interface DevicePlan {
  steps: ReadonlyStep[];
  refusals: string[];
  nothing?: string;
  terminating: string[];
}

function podJudged(f: ReadonlyFacts, p: PodFacts): { deletable: boolean; refusal?: string; terminating?: string; item?: StepEvidence } {
  const pod = p.pod;
  if (!pod)
    return { deletable: false, refusal: `pod-not-found: no pod on ${f.node} has uid ${p.uid} (an orphaned pod directory is orphaned-pod-volumes' business)` };
  const name = `${pod.namespace}/${pod.name} (uid ${p.uid})`;
  if (pod.node !== f.node) return { deletable: false, refusal: `pod-not-on-node: pod ${name} is on ${pod.node ?? 'no node'}, not ${f.node}` };
  if (pod.deletionTimestamp) return { deletable: false, terminating: `pod-already-terminating: pod ${name} is terminating since ${pod.deletionTimestamp}` };
  if (!pod.controller)
    return { deletable: false, refusal: `bare-pod: pod ${name} has no controller owner: reported, never deleted (nothing would create it again)` };
  if (!pod.resourceVersion) return { deletable: false, refusal: `pod-unknown: pod ${name} has no resourceVersion to pin its delete to` };
  return {
    deletable: true,
    item: {
      claim: `pod ${name} is on ${f.node}, not terminating, and owned by ${pod.controller.kind} ${pod.controller.name}, which makes it again`,
      source: 'pods get',
      observedAt: f.observedAt,
      status: 'holds',
      detail: `resourceVersion ${pod.resourceVersion}`,
    },
  };
}

// long because: the claims of §3.4 in their order for one device, each a named reason, then one step per deletable pod
function planDevice(f: ReadonlyFacts, d: DeviceFacts, policy: Pick<ReadonlyPolicy, 'pathsBackMs'>): DevicePlan {
  const out: DevicePlan = { steps: [], refusals: [], terminating: [] };
  if (d.rbd) {
    out.refusals.push(
      `rbd-blocklist-unknown: ${d.device} is an RBD device; whether this node's Ceph client is blocklisted is not known to the node agent (docs/decisions/0008 §3.8)`,
    );
    return out;
  }
  const system = systemClaim(f, d);
  if (system.refusal) {
    out.refusals.push(system.refusal);
    return out;
  }
  const stopped = stoppedClaim(f, d);
  if (stopped.refusal) {
    out.nothing = stopped.refusal;
    return out;
  }
  const claims: Judged[] = [stopped, notRequestedClaim(f, d), kernelErrorClaim(f, d), system];
  if (!f.kube.ok) out.refusals.push(`pods-unknown: ${f.kube.why}: the pods using ${d.device} cannot be told apart`);
  claims.push(pathsClaim(f, d));
  // A read is only tried once every path is back: the read's own reason is then the one to show.
  if (!claims.at(-1)?.refusal) claims.push(readableClaim(f, d, policy.pathsBackMs));
  out.refusals.push(...claims.flatMap((c) => (c.refusal ? [c.refusal] : [])));
  if (!d.pods.length && f.kube.ok) out.refusals.push(`no-pod-uses-mount: no pod's publish mount of ${d.device} was found: only kubelet can unstage it`);
  const pods = d.pods.map((p) => ({ p, j: podJudged(f, p) }));
  for (const { j } of pods) {
    if (j.refusal) out.refusals.push(j.refusal);
    if (j.terminating) out.terminating.push(j.terminating);
  }
  if (out.refusals.length || d.majorMinor === null) {
    if (d.majorMinor === null && !out.refusals.length) out.refusals.push(`device-unknown: /sys/block/${d.device}/dev is unreadable`);
    return out;
  }
  const evidence = claims.map((c) => c.item);
  const lastError = errorLinesAfterMount(d).at(-1);
  const kernelLine = lastError?.message ?? null;
  for (const { p, j } of pods) {
    if (!j.deletable || !j.item || !p.pod?.resourceVersion) continue;
    const pod = { namespace: p.pod.namespace, name: p.pod.name, uid: p.uid, resourceVersion: p.pod.resourceVersion };
    const pv = d.mounts.find((m) => m.podUid === p.uid)?.pv ?? null;
    out.steps.push({
      id: deletePodStepId(pod),
      kind: 'delete-pod',
      description: `delete pod ${pod.namespace}/${pod.name} (uid ${pod.uid}) so kubelet unstages ${d.device}${pv ? ` (PV ${pv})` : ''} and the next pod's stage checks and mounts it again${isXfsShutdown(d) ? " (XFS shut down: xfs_repair is the driver's or an operator's, not fsck -a)" : ''}`,
      destructive: true,
      risk: 'high',
      device: d.device,
      majorMinor: d.majorMinor,
      mountIds: d.mounts.map((m) => m.id),
      map: d.health.kind === 'multipath' ? d.health.map : null,
      pod,
      pv,
      kernelLine,
      stoppedAt: lastError?.at ?? null,
      evidence: [...evidence, j.item],
    });
  }
  return out;
}

export function plan(f: ReadonlyFacts, policy: Pick<ReadonlyPolicy, 'pathsBackMs'>): ReadonlyPlan {
  if (f.devices.length === 0) return { kind: 'nothing-to-do', summary: `no kubelet PV mount on ${f.node} has a file system the kernel stopped` };
  const parts = f.devices.map((d) => planDevice(f, d, policy));
  const refusals = parts.flatMap((p) => p.refusals);
  if (refusals.length) return { kind: 'refuse', reasons: refusals };
  const steps = parts.flatMap((p) => p.steps);
  const terminating = parts.flatMap((p) => p.terminating);
  if (!steps.length && !terminating.length)
    return {
      kind: 'nothing-to-do',
      summary: parts
        .map((p) => p.nothing ?? '')
        .filter(Boolean)
        .join('; '),
    };
  const devices = f.devices.filter((_, i) => parts[i]?.steps.length || parts[i]?.terminating.length).map((d) => d.device);
  const summary = steps.length
    ? `delete ${steps.length} pod(s) using ${devices.join(', ')}, whose file system the kernel stopped, so kubelet unstages and mounts it again${terminating.length ? `; ${terminating.join('; ')}` : ''}`
    : `${terminating.join('; ')}: verifying that ${devices.join(', ')} comes back`;
  return { kind: 'steps', summary, steps };
}
