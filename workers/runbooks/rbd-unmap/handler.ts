import type { Host } from '../../host/host.ts';
import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { RunbookHandler } from '../../engine/registry.ts';
import { createStepExecutor } from './execute-step.ts';
import type { UnmapFacts } from './facts.ts';
import type { NodePods } from './node-pods.ts';
import { observe } from './observe.ts';
import { plan } from './plan.ts';
import { DEFAULT_UNMAP_POLICY, type UnmapPolicy } from './policy.ts';
import type { UnmapStep } from './step.ts';
import { verify } from './verify.ts';

export interface RbdUnmapDeps {
  /** The node (createRealHost with HOST_ROOT / HOST_NSENTER); `rbd` runs in the host's namespaces. */
  host: Host;
  stateDir: string;
  pods: NodePods;
  policy?: Partial<UnmapPolicy>;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** The node half of `rbd-stale-mapping` (`rbd-unmap`) as a registry handler. */
export function createRbdUnmap(deps: RbdUnmapDeps): RunbookHandler<'rbd-unmap'> {
  const policy: UnmapPolicy = { ...DEFAULT_UNMAP_POLICY, ...deps.policy };
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const steps = createStepExecutor({ policy, sleep });
  return (job, ctx) => {
    const definition: RunbookDefinition<'rbd-unmap', UnmapFacts, UnmapStep> = {
      runbook: 'rbd-unmap',
      observe: (j, host) => observe(j, host, { pods: deps.pods, policy, ranOn: ctx.ranOn, now }),
      plan: (facts) => plan(facts),
      steps,
      verify: (j, host, planned) => verify(j, host, planned),
    };
    return runRunbook(definition, job, ctx, { host: deps.host, stateDir: deps.stateDir, now });
  };
}
