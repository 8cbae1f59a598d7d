import type { Host } from '../../host/host.ts';
import type { KubeWrites } from '../../kube-writes/kube-writes.ts';
import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { RunbookHandler } from '../../engine/registry.ts';
import type { OutOfServiceTaintReleaseJob } from '../../../src/core/catalogue/jobs.ts';
import { TransientError } from '../../../src/core/errors.ts';
import { unfinishedCleanup } from './claims.ts';
import { createStepExecutor } from './execute-step.ts';
import type { TaintReleaseFacts } from './facts.ts';
import { observe, type ObserveDeps } from './observe.ts';
import { plan } from './plan.ts';
import type { TaintReleaseStep } from './step.ts';
import { verify } from './verify.ts';

export interface TaintReleaseDeps extends Omit<ObserveDeps, 'now'> {
  /** The cluster worker's host with Ceph access (createCephHost): `ceph osd blocklist ls/rm`. */
  host: Host;
  /** The Kubernetes write port: the Node patch and its Event. */
  kube: KubeWrites;
  stateDir: string;
  /** How long verify waits for Rook to delete the node's NetworkFence. Default 60 s. */
  fenceTimeoutMs?: number;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Observe, and when the only thing that holds the taint is the node half of this boot still
 * running, wait for it: a TransientError, so the job is retried with its backoff, instead of a
 * refusal on a clean-up that may yet succeed (the Node watch starts both at once).
 */
async function observeOrWait(job: OutOfServiceTaintReleaseJob, deps: ObserveDeps): Promise<TaintReleaseFacts> {
  const facts = await observe(job, deps);
  const n = facts.nodeState.ok ? facts.nodeState.value : undefined;
  const planned = plan(facts, job);
  const pending = n ? unfinishedCleanup(facts, n) : [];
  if (planned.kind === 'refuse' && pending.length > 0 && planned.reasons.every((r) => r.startsWith('host-not-clean:'))) {
    throw new TransientError(`waiting for the node half of boot ${n?.bootId}: ${pending.map((j) => `${j.runbook} ${j.id} ${j.state}`).join(', ')}`);
  }
  return facts;
}

/** `out-of-service-taint-release` (cluster worker) as a registry handler: docs/decisions/0008 §4. */
export function createOutOfServiceTaintRelease(deps: TaintReleaseDeps): RunbookHandler<'out-of-service-taint-release'> {
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return (job, ctx) => {
    const definition: RunbookDefinition<'out-of-service-taint-release', TaintReleaseFacts, TaintReleaseStep> = {
      runbook: 'out-of-service-taint-release',
      observe: (j) => observeOrWait(j, { ...deps, now }),
      plan: (facts, j) => plan(facts, j),
      steps: createStepExecutor(deps.get),
      verify: (_j, _h, planned) => verify(planned, { get: deps.get, fenceTimeoutMs: deps.fenceTimeoutMs ?? 60_000, sleep, now: () => now().getTime() }),
    };
    return runRunbook(definition, job, ctx, { host: deps.host, kube: deps.kube, stateDir: deps.stateDir, now });
  };
}
