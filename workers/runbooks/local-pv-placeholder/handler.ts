import type { Host } from '../../host/host.ts';
import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { RunbookHandler } from '../../engine/registry.ts';
import { createStepExecutor } from './execute-step.ts';
import type { PlaceholderFacts } from './facts.ts';
import { DEFAULT_OPT_IN_LABEL, type NodeLabels, type OptInLabel } from './node-labels.ts';
import { observe } from './observe.ts';
import { plan } from './plan.ts';
import { PlaceholderStore } from './record-store.ts';
import type { PlaceholderStep } from './step.ts';
import { verify } from './verify.ts';

export interface LocalPvPlaceholderDeps {
  /** The real host (createRealHost); the engine wraps it for audit or dry-run. */
  host: Host;
  /** Host path of the state directory (config STATE_DIR): records, images and journals. */
  stateDir: string;
  /** Where the opt-in label is looked up. */
  nodeLabels: NodeLabels;
  /** Default `volume-medic.io/local-pv-placeholder=enabled`. */
  optInLabel?: OptInLabel;
  now?: () => Date;
}

/** The `local-pv-placeholder` runbook as a registry handler. */
export function createLocalPvPlaceholder(deps: LocalPvPlaceholderDeps): RunbookHandler<'local-pv-placeholder'> {
  const store = new PlaceholderStore(deps.stateDir);
  const steps = createStepExecutor(store);
  const now = deps.now ?? (() => new Date());
  const optIn = deps.optInLabel ?? DEFAULT_OPT_IN_LABEL;

  return (job, ctx) => {
    const definition: RunbookDefinition<'local-pv-placeholder', PlaceholderFacts, PlaceholderStep> = {
      runbook: 'local-pv-placeholder',
      observe: (j, host) => observe(j, host, { labels: deps.nodeLabels, optIn, store, ranOn: ctx.ranOn, jobId: ctx.jobId, now }),
      plan: (facts) => plan(facts),
      steps,
      verify: (j, host, planned) => verify(j, host, planned, store),
    };
    return runRunbook(definition, job, ctx, { host: deps.host, stateDir: deps.stateDir, now });
  };
}
