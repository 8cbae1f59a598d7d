import type { Host } from '../../host/host.ts';
import { runRunbook } from '../../engine/run-runbook.ts';
import type { RunbookDefinition } from '../../engine/runbook.ts';
import type { RunbookHandler } from '../../engine/registry.ts';
import type { BlocklistUndo } from './blocklist-undo.ts';
import { createCephHost, type CephAccess } from './ceph-access.ts';
import { createStepExecutor } from './execute-step.ts';
import type { StaleMappingFacts } from './facts.ts';
import type { RbdLookups } from './rbd-lookups.ts';
import type { NodeJobSink } from './node-job-sink.ts';
import { observe } from './observe.ts';
import { plan } from './plan.ts';
import { DEFAULT_STALE_MAPPING_POLICY, type StaleMappingPolicy } from './policy.ts';
import type { StaleMappingStep } from './step.ts';
import { verify } from './verify.ts';

export interface RbdStaleMappingDeps {
  /** The cluster worker's own host (createRealHost()): where `rbd`, `rados` and `ceph` run. */
  host: Host;
  /** ceph.conf, keyring, client id: added to every Ceph command, never logged. */
  ceph: CephAccess;
  lookups: RbdLookups;
  /** Wired to Dispatcher.enqueue by the cluster worker. */
  nodeJobs: NodeJobSink;
  /** A writable directory of the cluster worker (journals). */
  stateDir: string;
  policy?: Partial<StaleMappingPolicy>;
  /** Records each fence of a node's address (the undo out-of-service-taint-release may lift); none: not recorded. */
  blocklistUndo?: BlocklistUndo;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** The cluster half of `rbd-stale-mapping` as a registry handler. */
export function createRbdStaleMapping(deps: RbdStaleMappingDeps): RunbookHandler<'rbd-stale-mapping'> {
  const policy: StaleMappingPolicy = { ...DEFAULT_STALE_MAPPING_POLICY, ...deps.policy };
  const host = createCephHost(deps.host, deps.ceph);
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  return (job, ctx) => {
    const definition: RunbookDefinition<'rbd-stale-mapping', StaleMappingFacts, StaleMappingStep> = {
      runbook: 'rbd-stale-mapping',
      observe: (j, h) => observe(j, h, { lookups: deps.lookups, policy, jobKey: ctx.jobId, now }),
      plan: (facts, j) => plan(facts, j),
      steps: createStepExecutor(deps.nodeJobs, ctx.mode, deps.blocklistUndo ? { undo: deps.blocklistUndo, jobKey: ctx.jobId, now } : undefined),
      verify: (j, h, planned) =>
        verify(j, h, planned, {
          timeoutMs: policy.watcherGoneTimeoutMs,
          handoffTimeoutMs: policy.handoffVerifyMs,
          sleep,
          now: () => now().getTime(),
        }),
    };
    return runRunbook(definition, job, ctx, { host, stateDir: deps.stateDir, now });
  };
}
