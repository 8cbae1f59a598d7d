import { isDeepStrictEqual } from 'node:util';
import { type Check, type Plan, type Verification, verification } from '../../engine/runbook.ts';
import { OUT_OF_SERVICE_TAINT } from './facts.ts';
import { type KubeGet, readNetworkFence, readNode } from './reads.ts';
import type { TaintReleaseStep } from './step.ts';

// The Node has no out-of-service taint and every other taint is as the plan saw it; where Rook
// fenced the node, its NetworkFence goes once the taint is gone (Rook deletes it at once, and
// csi-addons lifts the blocklist): verify waits for that, and says so when it stays.

export interface VerifyDeps {
  get: KubeGet;
  /** How long Rook may take to delete the node's NetworkFence; 0: look once. */
  fenceTimeoutMs: number;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

export async function verify(plan: Extract<Plan<TaintReleaseStep>, { kind: 'steps' }>, deps: VerifyDeps): Promise<Verification> {
  const step = plan.steps.find((s) => s.kind === 'remove-taint');
  if (!step || step.kind !== 'remove-taint') return verification([]);
  const checks: Check[] = [];
  const n = await readNode(deps.get, step.node);
  checks.push({ what: `Node ${step.node} carries no ${OUT_OF_SERVICE_TAINT} taint`, ok: !!n && n.oosIndex < 0 });
  const others = n?.taints ?? [];
  checks.push({
    what: `the other taints of Node ${step.node} are those the plan saw`,
    ok: isDeepStrictEqual(others, step.otherTaints),
    ...(isDeepStrictEqual(others, step.otherTaints) ? {} : { detail: `now ${JSON.stringify(others)}, planned ${JSON.stringify(step.otherTaints)}` }),
  });
  if (step.networkFence) checks.push(await fenceGone(step.node, deps));
  return verification(checks);
}

async function fenceGone(node: string, deps: VerifyDeps): Promise<Check> {
  const started = deps.now();
  let fence = await readNetworkFence(deps.get, node);
  while (fence.state !== 'none' && deps.now() - started < deps.fenceTimeoutMs) {
    await deps.sleep(1_000);
    fence = await readNetworkFence(deps.get, node);
  }
  const waited = Math.round((deps.now() - started) / 1000);
  if (fence.state === 'none') return { what: `Rook deleted NetworkFence ${node} (the node is unfenced in Ceph)`, ok: true };
  return {
    what: `NetworkFence ${node} is still there after ${waited} s: Rook did not unfence the node (ROOK_WATCH_FOR_NODE_FAILURE off?)`,
    ok: false,
    detail: fence.state === 'unknown' ? fence.error : `fenceState ${fence.fenceState ?? '?'}`,
  };
}
