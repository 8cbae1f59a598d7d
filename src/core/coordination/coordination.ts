// Coordination with the other tools that take a node away (docs/safety.md, "Other tools on the
// node"): before a destructive step the engine asks whether kured is rebooting the node, a drain
// is under way on it, or a medik8s remediation is active for it. Busy or unknown, the step waits
// (unknown means wait, never act: the safety rule); free, it runs.

/** Who holds the node: kured's reboot lock, a drain, or a medik8s remediation. */
type CoordinationWho = 'kured' | 'drain' | 'medik8s';

/** `why` and `unknown` are shown as they are in the job, the console and the Event: plain sentences. */
export type CoordinationAnswer = { busy: false } | { busy: true; who: CoordinationWho; why: string } | { unknown: string };

/** The port the engine asks, fresh, before each destructive step (workers/engine/coordinate.ts). */
export interface Coordination {
  busy(node: string): Promise<CoordinationAnswer>;
}

/** What each holder answers, merged: any busy wins (its own why), else any unknown, else free. */
export function mergeAnswers(answers: readonly CoordinationAnswer[]): CoordinationAnswer {
  const busy = answers.find((a): a is Extract<CoordinationAnswer, { busy: true }> => 'busy' in a && a.busy);
  if (busy) return busy;
  const unknown = answers.flatMap((a) => ('unknown' in a ? [a.unknown] : []));
  if (unknown.length > 0) return { unknown: unknown.join('; ') };
  return { busy: false };
}

/** "kured (holds the reboot lock for worker-1: ...)": what a wait names, in the job, the console and the CLI. */
export function describeHolder(a: Extract<CoordinationAnswer, { busy: true }>): string {
  return `${a.who} (${a.why})`;
}
