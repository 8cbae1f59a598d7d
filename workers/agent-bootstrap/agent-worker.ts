import type { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { keepFor } from '../../src/core/catalogue/policy.ts';
import { placementOfQueue } from '../../src/core/catalogue/queues.ts';
import { modeOf } from '../../src/core/config/load.ts';
import type { AgentConfig } from '../../src/core/config/schema.ts';
import type { Trust } from '../../src/core/trust/from-config.ts';
import { join } from 'node:path';
import { controlMemory, controlMemoryFile } from '../engine/control-memory.ts';
import type { EnrolledKeys } from '../engine/enrolled-keys.ts';
import { controlsFromConfig } from '../engine/job-controls.ts';
import { createRunbookWorker, type RunbookWorker, type RunbookWorkerOptions } from '../engine/runbook-worker.ts';
import { seenWork } from '../engine/seen-work.ts';

// An agent's runbook worker as configuration says: the modes, the lock, how long finished jobs
// stay, the operator controls, and the trust its work is verified with (keys from SIGNING_KEYS_DIR
// or enrolment, replays remembered in STATE_DIR). What differs between the node agent and the
// cluster worker (queue, runbooks, what a job must be to be theirs) is theirs to say.

export interface AgentWorkerOptions extends Pick<RunbookWorkerOptions, 'queue' | 'ranOn' | 'registry' | 'accepts' | 'events'> {
  as: 'node-agent' | 'cluster-worker';
  config: AgentConfig;
  /** The worker closes it when it closes. */
  store: AgentStore;
  trust: Trust;
  enrolled?: EnrolledKeys | undefined;
  /** Its file of finished work's seals in STATE_DIR (a replay is refused across restarts). */
  seenFile: string;
  /** More of the controls than configuration's (a node agent's node, its label, the receiver's breakers). */
  controls?: Omit<NonNullable<RunbookWorkerOptions['controls']>, keyof ReturnType<typeof controlsFromConfig>>;
  log: Logger;
}

export function createAgentWorker(o: AgentWorkerOptions): RunbookWorker {
  const { config, trust, enrolled, log } = o;
  if (trust.allowUnsigned) log.warn(`ALLOW_UNSIGNED_WORK=true: the ${o.as} runs work without a seal; anyone who can write to Redis can make it act`);
  return createRunbookWorker({
    queue: o.queue,
    store: o.store,
    ranOn: o.ranOn,
    registry: o.registry,
    modeOf: (runbook) => modeOf(config, runbook),
    accepts: o.accepts,
    lockDurationMs: config.lockDurationMs,
    keepFinished: keepFor(config.dedupWindowMs[placementOfQueue(o.queue)]),
    log,
    controls: { ...controlsFromConfig(config), ...o.controls },
    ...(o.events ? { events: o.events } : {}),
    trust: {
      ring: trust.ring,
      controlRing: trust.controls.ring,
      allowUnsigned: trust.allowUnsigned,
      seen: seenWork(join(config.stateDir, o.seenFile), log),
      controls: controlMemory(join(config.stateDir, controlMemoryFile(config.queuePrefix, o.as)), log),
      ...(enrolled ? { onUnknownKey: () => enrolled.renewSoon() } : {}),
      ...(trust.sealer ? { auditSealer: trust.sealer } : {}),
    },
  });
}
