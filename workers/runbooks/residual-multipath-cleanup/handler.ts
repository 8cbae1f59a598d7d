import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import type { RunbookHandler } from '../../engine/registry.ts';
import type { AttachedVolumes } from './attached-volumes.ts';
import { createStepExecutor } from './execute-step.ts';
import type { ResidualFacts } from './facts.ts';
import { observe } from './observe.ts';
import { plan, type ResidualPlan } from './plan.ts';
import { DEFAULT_POLICY, type ResidualPolicy } from './policy.ts';
import type { ResidualStep } from './step.ts';
import { verify } from './verify.ts';

export interface ResidualMultipathDeps {
  /** The real host (createRealHost); the engine wraps it for audit or dry-run. */
  host: Host;
  /** Host path of the state directory (config STATE_DIR): journals, observations over time, intent records. */
  stateDir: string;
  /** VolumeAttachments of the node as WWIDs; InMemoryAttachedVolumes({}, { known: false }) without a cluster. */
  attached: AttachedVolumes;
  /** Overrides of DEFAULT_POLICY. */
  policy?: Partial<ResidualPolicy>;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** The `residual-multipath-cleanup` runbook as a registry handler. */
export function createResidualMultipathCleanup(deps: ResidualMultipathDeps): RunbookHandler<'residual-multipath-cleanup'> {
  const policy: ResidualPolicy = { ...DEFAULT_POLICY, ...deps.policy };
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const clock = { sleep, now: () => now().getTime() };
  return (job, ctx) => {
    const steps = createStepExecutor({ policy, ...clock, dryRun: ctx.mode === 'dry-run', stateDir: deps.stateDir });
    const definition: RunbookDefinition<'residual-multipath-cleanup', ResidualFacts, ResidualStep> = {
      runbook: 'residual-multipath-cleanup',
      observe: (j, host) =>
        observe(j, host, {
          attached: deps.attached,
          policy,
          ranOn: ctx.ranOn,
          now,
          dryRun: ctx.mode === 'dry-run',
          stateDir: deps.stateDir,
        }),
      plan: (facts) => plan(facts, policy, { stateDir: deps.stateDir }, ctx.jobId),
      steps,
      verify: (j, host, planned) => verify(j, host, planned as Extract<ResidualPlan, { kind: 'steps' }>, { policy, ...clock, stateDir: deps.stateDir }),
    };
    return runRunbook(definition, job, ctx, { host: deps.host, stateDir: deps.stateDir, now });
  };
}
