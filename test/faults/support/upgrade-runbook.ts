import type { ResidualMultipathJob } from '../../../src/core/catalogue/jobs.ts';
import type { Host } from '../../../workers/host/host.ts';
import type { PlannedStep, RunbookDefinition } from '../../../workers/engine/runbook.ts';

// The rolling upgrade's runbook: two destructive steps per job whose effects only the journal
// keeps from repeating (as journal-runbook.ts), each appending `<job key> <step> <version>` to
// the node's effects log by a real command. The log is the ground truth: a key missing from it
// was lost, a line twice is a step run twice, and the version says which release's agent ran it.
// It imports nothing at run time: the agent of either release loads it (versioned-agent.ts).

export const EFFECTS_LOG = '/var/log/effects.log';
export const UPGRADE_STEPS = ['detach:a', 'detach:b'] as const;

interface KeyedStep extends PlannedStep {
  key: string;
}

/**
 * `pause`: a job whose key contains `keyPart` hangs (a real `sleep`) before its second step's
 * effect, after its first took effect: where a test kills the agent, so that the next agent
 * must resume the job from the journal the first one left.
 */
export function upgradeRunbook(
  version: string,
  pause?: { keyPart: string; onPause(key: string, step: string): void },
): RunbookDefinition<'residual-multipath-cleanup', { key: string }, KeyedStep> {
  return {
    runbook: 'residual-multipath-cleanup',
    observe: async (job) => ({ key: job.key }),
    plan: (facts) => ({
      kind: 'steps',
      summary: 'two destructive steps',
      steps: UPGRADE_STEPS.map((id) => ({
        id,
        key: facts.key,
        description: `detach ${id}`,
        destructive: true,
        evidence: [{ claim: `${id} is ours`, source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
      })),
    }),
    steps: {
      isDone: async () => false,
      apply: async (step, host: Host) => {
        if (pause && step.key.includes(pause.keyPart) && step.id === UPGRADE_STEPS[1]) {
          pause.onPause(step.key, step.id);
          // Orphaned when the agent is killed (its own process group): short, so it does not linger.
          await host.run(['sleep', '20'], { timeoutMs: 60_000 });
        }
        // A step takes a moment, so a SIGTERM or a new agent's start often finds one under way.
        const r = await host.run(['sh', '-c', 'sleep 0.05; echo "$1" >> "$2"', 'sh', `${step.key} ${step.id} ${version}`, host.argPath(EFFECTS_LOG)]);
        if (r.exitCode !== 0) throw new Error(`step ${step.id} of ${step.key}: exit ${r.exitCode}`);
      },
    },
    verify: async (_job: ResidualMultipathJob) => ({ ok: true, checks: [{ what: 'every step ran', ok: true }] }),
  };
}
