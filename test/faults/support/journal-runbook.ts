import type { ResidualMultipathJob } from '../../../src/core/catalogue/jobs.ts';
import { expectOk } from '../../../workers/host/command-failed.ts';
import type { PlannedStep, RunbookDefinition } from '../../../workers/engine/runbook.ts';

// A runbook with four destructive steps whose effects cannot be checked afterwards (like
// `losetup -d loop101`: once detached, someone else may own loop101), so only the journal can
// keep a retry from repeating them. Each step's effect is one line appended to an effects log on
// the host by a real command: the log is the ground truth of what took effect, and how often.
// `pauseBefore` makes a step hang (a real `sleep`) BEFORE its effect, where a test kills the agent.

export const EFFECTS_LOG = '/var/log/effects.log';
export const STEP_IDS = ['detach:a', 'detach:b', 'detach:c', 'detach:d'] as const;

export function journalRunbook(
  pauseBefore: string | undefined,
  onPause: (step: string) => void,
): RunbookDefinition<'residual-multipath-cleanup', Record<string, never>, PlannedStep> {
  return {
    runbook: 'residual-multipath-cleanup',
    observe: async () => ({}),
    plan: () => ({
      kind: 'steps',
      summary: 'four destructive steps',
      steps: STEP_IDS.map((id) => ({
        id,
        description: `detach ${id}`,
        destructive: true,
        evidence: [{ claim: `${id} is ours`, source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
      })),
    }),
    steps: {
      isDone: async () => false,
      apply: async (step, host) => {
        if (step.id === pauseBefore) {
          onPause(step.id);
          // Orphaned when the agent is killed (its own process group): short, so it does not linger.
          await host.run(['sleep', '20'], { timeoutMs: 60_000 });
        }
        expectOk(await host.run(['sh', '-c', 'echo "$1" >> "$2"', 'sh', step.id, host.argPath(EFFECTS_LOG)]));
      },
    },
    verify: async (_job: ResidualMultipathJob) => ({ ok: true, checks: [{ what: 'every step ran', ok: true }] }),
  };
}
