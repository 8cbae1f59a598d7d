import { isDeepStrictEqual } from 'node:util';
import type { StepExecutor } from '../../engine/runbook.ts';
import { expectOk } from '../../host/command-failed.ts';
import type { Host } from '../../host/host.ts';
import type { JsonPatchOp, KubeWrites } from '../../kube-writes/kube-writes.ts';
import { blocklist } from '../rbd-stale-mapping/ceph-commands.ts';
import { ipOf } from '../rbd-stale-mapping/watchers.ts';
import { OUT_OF_SERVICE_TAINT, type NodeState } from './facts.ts';
import { type KubeGet, readNode } from './reads.ts';
import type { TaintReleaseStep } from './step.ts';

// Check-then-change, each right before it acts, on a fresh GET of the Node: the boot is still the
// new one the plan judged, and the out-of-service taint is still exactly the planned one at its
// index. What changed makes the step fail (the job observes and plans again); the JSON patch's
// `test` ops then pin the same facts on the API server, so a change that lands after this
// re-check fails the patch (409/422), never removes the wrong taint.

const blocklistRmArgv = (address: string): string[] => ['ceph', 'osd', 'blocklist', 'rm', address];

type RemoveTaint = Extract<TaintReleaseStep, { kind: 'remove-taint' }>;
type BlocklistRm = Extract<TaintReleaseStep, { kind: 'blocklist-rm' }>;

/** The patch of docs/decisions/0008 §4.4: test resourceVersion and the taint at its index, then remove that index. */
export function removeTaintPatch(step: Pick<RemoveTaint, 'resourceVersion' | 'index' | 'taint'>): JsonPatchOp[] {
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: step.resourceVersion },
    { op: 'test', path: `/spec/taints/${step.index}`, value: step.taint },
    { op: 'remove', path: `/spec/taints/${step.index}` },
  ];
}

async function freshNode(get: KubeGet, step: TaintReleaseStep): Promise<NodeState> {
  const n = await readNode(get, step.node);
  if (!n) throw new Error(`node-gone: Node ${step.node} does not exist any more`);
  if (n.bootId !== step.bootIdNow) {
    throw new Error(`boot-changed: Node ${step.node} runs boot ${n.bootId ?? '(none reported)'}, the plan judged boot ${step.bootIdNow}: observe again`);
  }
  return n;
}

async function removeTaint(step: RemoveTaint, get: KubeGet, kube: KubeWrites): Promise<void> {
  const n = await freshNode(get, step);
  const now = n.taints[step.index];
  if (!now || !isDeepStrictEqual(now, step.taint)) {
    throw new Error(
      `taint-changed: Node ${step.node} spec.taints[${step.index}] is ${now ? JSON.stringify(now) : 'gone'}, the plan's is ${JSON.stringify(step.taint)}: observe again`,
    );
  }
  const reason = `out-of-service-taint-release: node ${step.node} came back on boot ${step.bootIdNow}`;
  await kube.patchNodeTaints({ node: step.node, ops: removeTaintPatch(step), reason });
  await kube.event({
    involved: { kind: 'Node', name: step.node },
    reason: 'OutOfServiceTaintReleased',
    type: 'Normal',
    message:
      `volume-medic removed ${OUT_OF_SERVICE_TAINT} (added ${step.taint.timeAdded ?? 'at an unrecorded time'}): boot ${step.bootIdAtFirstSight ?? '(not recorded)'} at the taint's first sight, ${step.bootIdNow} now; ` +
      `host clean-up jobs ${step.cleanupJobs.join(', ') || '(none listed)'}${step.networkFence ? `; Rook unfences the node in Ceph (NetworkFence ${step.node})` : ''}`,
  });
}

async function blocklistRm(step: BlocklistRm, get: KubeGet, host: Host): Promise<void> {
  const n = await freshNode(get, step);
  if (!n.addresses.includes(ipOf(step.address))) {
    throw new Error(`address-moved: ${step.address} is no longer an address of Node ${step.node} (${n.addresses.join(', ')}): observe again`);
  }
  expectOk(await host.run(blocklistRmArgv(step.address)));
}

export function createStepExecutor(get: KubeGet): StepExecutor<TaintReleaseStep> {
  return {
    async isDone(step, host) {
      switch (step.kind) {
        case 'blocklist-rm':
          return !(await blocklist(host)).some((e) => e.addr === step.address);
        case 'remove-taint': {
          const n = await readNode(get, step.node);
          return !n || n.oosIndex < 0;
        }
        default: {
          const never: never = step;
          return never;
        }
      }
    },
    async apply(step, host, kube) {
      switch (step.kind) {
        case 'blocklist-rm':
          return blocklistRm(step, get, host);
        case 'remove-taint':
          return removeTaint(step, get, kube);
        default: {
          const never: never = step;
          return never;
        }
      }
    },
  };
}
