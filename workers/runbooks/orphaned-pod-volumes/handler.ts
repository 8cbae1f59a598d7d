import type { RunbookHandler } from '../../engine/registry.ts';
import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { createStepExecutor } from './execute-step.ts';
import type { OrphanFacts } from './facts.ts';
import { observe } from './observe.ts';
import type { OrphanKube } from './orphan-kube.ts';
import { plan } from './plan.ts';
import { DEFAULT_ORPHAN_POLICY, type OrphanPolicy } from './policy.ts';
import type { OrphanStep } from './step.ts';
import { verify } from './verify.ts';

export interface OrphanedPodVolumesDeps {
  /** The node: commands in the host's mount namespace (HOST_NSENTER), /proc under HOST_ROOT. */
  host: Host;
  stateDir: string;
  kube: OrphanKube;
  policy?: Partial<OrphanPolicy>;
  now?: () => Date;
}

/** `orphaned-pod-volumes` as a registry handler (docs/decisions/0008 §2). */
export function createOrphanedPodVolumes(deps: OrphanedPodVolumesDeps): RunbookHandler<'orphaned-pod-volumes'> {
  const policy: OrphanPolicy = { ...DEFAULT_ORPHAN_POLICY, ...deps.policy };
  const now = deps.now ?? (() => new Date());
  const steps = createStepExecutor({ kube: deps.kube });
  return (job, ctx) => {
    const definition: RunbookDefinition<'orphaned-pod-volumes', OrphanFacts, OrphanStep> = {
      runbook: 'orphaned-pod-volumes',
      observe: (j, host) =>
        observe(j, host, { kube: deps.kube, stateDir: deps.stateDir, kubeletRoot: policy.kubeletRoot, minAgeMs: policy.minAgeMs, ranOn: ctx.ranOn, now }),
      plan: (facts) => plan(facts),
      steps,
      verify: (_j, host, planned) => verify(host, planned),
    };
    return runRunbook(definition, job, ctx, { host: deps.host, stateDir: deps.stateDir, now });
  };
}
