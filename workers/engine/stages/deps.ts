import type { Logger } from '../../../src/adapters/observability/logger.ts';
import type { WorkerMetrics } from '../../../src/adapters/observability/worker-metrics.ts';
import type { RedisConnection } from '../../../src/adapters/redis/redis.ts';
import type { Keyring } from '../../../src/core/trust/keyring.ts';
import type { Sealer } from '../../../src/core/trust/seal.ts';
import type { ControlMemory } from '../../../src/core/controls/sealed-records.ts';
import type { JobControls } from '../job-controls.ts';
import type { RunbookContext } from '../registry.ts';
import type { JobEventSink } from '../job-event-sink.ts';
import type { SeenWork } from '../seen-work.ts';

// What the stages of one worker share: verify trust -> begin (controls, park) -> run -> record.

export interface WorkTrust {
  ring: Keyring;
  /** ALLOW_UNSIGNED_WORK: a job without a seal is run (a bad seal is still refused). */
  allowUnsigned: boolean;
  seen: SeenWork;
  /** The newest mode and pause records accepted, kept across restarts (STATE_DIR); default: memory. */
  controls?: ControlMemory;
  /** What controls are verified with (the control keys' certificates); default `ring`. */
  controlRing?: Keyring;
  /** Numbers and seals this worker's audit entries (its work key of its queue): the receiver checks them. */
  auditSealer?: Sealer;
  /** A job came sealed with a key this process does not hold (an enrolled consumer then enrols again: a root may have rotated). */
  onUnknownKey?: () => void;
  now?: () => number;
}

export interface StageDeps {
  queue: string;
  /** How long the queue keeps a finished job (its deduplication window), ms: a job with the same id within it is the same job. */
  keptFinishedMs: number;
  ranOn: string;
  log: Logger;
  /** The worker's command connection: statistics and refusals are written on it. */
  connection: RedisConnection;
  /** Its queue's statistics hash (a node's Redis user may write no other's). */
  stats: string;
  metrics: WorkerMetrics;
  controls?: JobControls;
  /** Other tools on the node, asked before each destructive step (RunbookContext.coordination). */
  coordination?: RunbookContext['coordination'];
  events?: JobEventSink;
  trust?: WorkTrust;
  /** The node this worker runs for (the node agent's); untrusted work is reported on it. */
  node?: string;
}
