import type { RunbookHandler } from '../../engine/registry.ts';
import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import type { KubeWrites } from '../../kube-writes/kube-writes.ts';
import { errorLinesAfterMount, WAIT_REASONS } from './evidence.ts';
import { createStepExecutor } from './execute-step.ts';
import type { ReadonlyFacts } from './facts.ts';
import { observe } from './observe.ts';
import { plan, type ReadonlyPlan } from './plan.ts';
import { DEFAULT_POLICY, type ReadonlyPolicy } from './policy.ts';
import type { RecoveryLookups } from './recovery-lookups.ts';
import type { ReadonlyStep } from './step.ts';
import { type VerifyTarget, verify } from './verify.ts';

export interface ReadonlyRecoveryDeps {
  /** The real host; the engine wraps it for audit or dry-run. */
  host: Host;
  /** The Kubernetes write port (the pod delete and its Events); the engine wraps it like the host. */
  kube?: KubeWrites;
  /** The node agent's reads (pods, PVs); undefined without cluster access: the runbook refuses. */
  lookups: RecoveryLookups | undefined;
  stateDir: string;
  policy?: Partial<ReadonlyPolicy>;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** Refused only because the device is not back yet: wait and look again instead. */
const onlyWaiting = (reasons: readonly string[]): boolean => reasons.length > 0 && reasons.every((r) => WAIT_REASONS.has(r.slice(0, r.indexOf(':'))));

/** The devices the verify looks at: those of the steps, or of the pods already terminating. */
function verifyTargets(planned: ReadonlyPlan, facts: ReadonlyFacts | undefined): VerifyTarget[] {
  if (planned.kind !== 'steps') return [];
  const out = new Map<string, VerifyTarget>();
  for (const s of planned.steps) {
    const t = out.get(s.device) ?? { device: s.device, majorMinor: s.majorMinor, deletedUids: [], stoppedMountIds: s.mountIds, stoppedAt: s.stoppedAt };
    out.set(s.device, { ...t, deletedUids: [...t.deletedUids, s.pod.uid] });
  }
  for (const d of facts?.devices ?? []) {
    const terminating = d.pods.filter((p) => p.pod?.deletionTimestamp).map((p) => p.uid);
    if (!terminating.length || !d.majorMinor) continue;
    const t = out.get(d.device) ?? {
      device: d.device,
      majorMinor: d.majorMinor,
      deletedUids: [],
      stoppedMountIds: d.mounts.map((m) => m.id),
      stoppedAt: errorLinesAfterMount(d).at(-1)?.at ?? null,
    };
    out.set(d.device, { ...t, deletedUids: [...t.deletedUids, ...terminating] });
  }
  return [...out.values()];
}

/** The `readonly-filesystem-recovery` runbook as a registry handler (docs/decisions/0008 §3). */
export function createReadonlyFilesystemRecovery(deps: ReadonlyRecoveryDeps): RunbookHandler<'readonly-filesystem-recovery'> {
  const policy: ReadonlyPolicy = { ...DEFAULT_POLICY, ...deps.policy };
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return async (job, ctx) => {
    let facts: ReadonlyFacts | undefined;
    const definition: RunbookDefinition<'readonly-filesystem-recovery', ReadonlyFacts, ReadonlyStep> = {
      runbook: 'readonly-filesystem-recovery',
      observe: async (j, host) => {
        facts = await observe(j, host, { policy, lookups: deps.lookups, stateDir: deps.stateDir, now });
        return facts;
      },
      plan: (f) => {
        const planned = plan(f, policy);
        // The paths are not back, or the device does not answer yet: not a refusal but a wait (the
        // engine parks the job and it looks again); once the device is back, the healthy-over-time
        // claim keeps it waiting READONLY_PATHS_BACK_SECONDS over two looks.
        if (planned.kind !== 'refuse' || !onlyWaiting(planned.reasons)) return planned;
        return {
          kind: 'wait',
          why: planned.reasons.join('; '),
          until: new Date(now().getTime() + Math.max(policy.pathsBackMs / 2, 5_000)),
        };
      },
      steps: createStepExecutor({ policy, lookups: deps.lookups, node: job.target.node, jobId: ctx.jobId }),
      verify: (_j, host, planned) => verify(host, verifyTargets(planned, facts), { policy, now: () => now().getTime(), sleep }),
    };
    return runRunbook(definition, job, ctx, { host: deps.host, ...(deps.kube ? { kube: deps.kube } : {}), stateDir: deps.stateDir, now });
  };
}
