import { verification, type Check, type Plan, type Verification } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { statPath } from './node-reads.ts';
import type { OrphanStep } from './step.ts';

// Each planned path is gone; a pod directory that is back (kubelet made it again: a pod with that
// UID came back) fails loudly, since a pod UID never repeats and the API check must have lied.

export async function verify(host: Host, plan: Extract<Plan<OrphanStep>, { kind: 'steps' }>): Promise<Verification> {
  const checks: Check[] = [];
  for (const s of plan.steps) {
    const left = await statPath(host, s.path);
    checks.push({
      what: `${s.path} is gone`,
      ok: left === null,
      ...(left ? { detail: `still there (${left.type})${s.rel === '' ? ': a pod directory came back' : ''}` } : {}),
    });
  }
  return verification(checks);
}
