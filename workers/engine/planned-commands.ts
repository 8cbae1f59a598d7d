import type { Host } from '../host/host.ts';
import { createDryRunHost } from '../host/dry-run-host.ts';
import { createDryRunKubeWrites } from '../kube-writes/audit-kube-writes.ts';
import type { KubeWrites } from '../kube-writes/kube-writes.ts';
import type { PlanView } from './gate.ts';
import type { PlannedStep, StepExecutor } from './runbook.ts';

// The exact argv a parked job's steps would run, for the operator who must decide on them:
// the engine applies each step not yet run against a dry-run host, the same
// simulation dry-run mode uses, so every runbook gets it without stating its commands twice.
// Reads and read-only commands reach the node, changes (to the node and to the Kubernetes API) are
// only recorded: both ports are wrapped here, whatever the caller passes in. Done once, when a job
// parks (not before every step), within a time budget.
//
// What it cannot know: a step whose own checks expect an earlier step's effect (the disk is no
// longer held by the flushed map) stops in simulation; it is shown with the commands seen so far
// and why the rest is not known before the earlier steps ran.

/** A step of a parked job's plan, with what it would run. */
export type PlanViewStep = PlannedStep & {
  /** Commands the step would run now, in order (host file changes as `host:<op>`, API writes as `kube:<call>` entries). */
  plannedArgv?: string[][];
  /** Why plannedArgv may be incomplete (the simulation stopped or ran out of time). */
  plannedNote?: string;
};

const BUDGET_MS = 5_000;
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The plan view of a parked job: every step as planned, and for `from` (the step it waits
 * before) and the steps after it, the argv they would run.
 */
export async function planWithCommands<S extends PlannedStep>(
  plan: { summary: string; steps: readonly S[] },
  from: number,
  executor: StepExecutor<S>,
  ports: { host: Host; kube: KubeWrites },
  budgetMs = BUDGET_MS,
): Promise<PlanView> {
  const deadline = Date.now() + budgetMs;
  const steps: PlanViewStep[] = [];
  // Set when a step's simulation ran out of time: the budget is spent whatever Date.now() says
  // (a timer may fire a millisecond before the deadline it was computed from).
  let spent = false;
  for (const [i, step] of plan.steps.entries()) {
    if (i < from) {
      steps.push(step);
      continue;
    }
    const argv: string[][] = [];
    const dry = createDryRunHost(ports.host, (r) => argv.push([...r.argv]));
    const dryKube = createDryRunKubeWrites(ports.kube, (r) => argv.push([...r.argv]));
    let note: string | undefined;
    const left = deadline - Date.now();
    if (spent || left <= 0) note = 'not simulated: the time for simulating the plan ran out';
    else {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          executor.apply(step, dry, dryKube),
          new Promise((_r, reject) => {
            timer = setTimeout(() => {
              spent = true;
              reject(new Error(`simulation took longer than ${budgetMs} ms`));
            }, left);
          }),
        ]);
      } catch (err) {
        note = `commands after this point depend on earlier steps or the node: ${message(err)}`.slice(0, 500);
      } finally {
        clearTimeout(timer);
      }
    }
    steps.push({ ...step, plannedArgv: argv, ...(note ? { plannedNote: note } : {}) });
  }
  return { summary: plan.summary, steps };
}
