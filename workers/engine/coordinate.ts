import { KubeCoordination, type KubeRead } from '../../src/adapters/kube/kube-coordination.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { AgentConfig } from '../../src/core/config/schema.ts';
import { type Coordination, describeHolder } from '../../src/core/coordination/coordination.ts';
import type { RunbookContext } from './registry.ts';

// What the engine makes of the Coordination port's answer before a destructive step
// (run-runbook.ts, passCoordination): free goes on; busy waits for the holder; unknown waits too
// (unknown means wait, never act: docs/safety.md); a port that throws is unknown.

export interface CoordinationWait {
  /** "waiting for kured (holds the reboot lock for worker-1 ...)": the job's, the console's and the Event's text. */
  why: string;
  until: Date;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Why and until when the step must wait, or undefined when it may run. A job that names no node has none to wait for. */
export async function askCoordination(
  c: { check: Coordination; recheckMs: number },
  node: string | undefined,
  now: Date,
): Promise<CoordinationWait | undefined> {
  if (!node) return undefined;
  let answer: Awaited<ReturnType<Coordination['busy']>>;
  try {
    answer = await c.check.busy(node);
  } catch (err) {
    answer = { unknown: message(err) };
  }
  if ('busy' in answer && !answer.busy) return undefined;
  const until = new Date(now.getTime() + c.recheckMs);
  if ('unknown' in answer) return { why: `waiting: whether another tool acts on ${node} is unknown (${answer.unknown})`, until };
  return { why: `waiting for ${describeHolder(answer)}`, until };
}

/**
 * The coordination an agent's configuration asks for: COORDINATION on and API access (`read`),
 * the Kubernetes one; off, none. Without API access no step waits for them: there is no cluster
 * to coordinate with that the agent could see (said once at start).
 */
export function coordinationFromConfig(
  config: Pick<AgentConfig, 'coordination' | 'coordinationRecheckSeconds' | 'kuredDaemonSet' | 'kuredLockAnnotation' | 'medik8sNamespaces'>,
  read: KubeRead | undefined,
  log: Logger,
): RunbookContext['coordination'] {
  if (!config.coordination) return undefined;
  if (!read) {
    log.warn('COORDINATION is on but there is no Kubernetes API access: destructive steps do not wait for kured, drains or medik8s');
    return undefined;
  }
  const [namespace = 'kube-system', name = 'kured'] = config.kuredDaemonSet.split('/');
  return {
    check: new KubeCoordination({
      get: read,
      kured: { namespace, name, annotation: config.kuredLockAnnotation },
      medik8sNamespaces: config.medik8sNamespaces,
    }),
    recheckMs: Math.round(config.coordinationRecheckSeconds * 1000),
  };
}
