import { Breakers, breakerCapsFromConfig } from '../../adapters/controls/breakers.ts';
import { ControlMirrors } from '../../adapters/controls/control-mirrors.ts';
import { BullJobStore } from '../../adapters/jobstore/bull-job-store.ts';
import { Dispatcher } from '../../adapters/jobstore/dispatcher.ts';
import { IncidentIndex } from '../../adapters/jobstore/incident-index.ts';
import { createQueueBoard, type QueueBoard } from '../../adapters/jobstore/queue-board.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import type { JobStore } from '../../core/jobs/job-store.ts';
import type { Trust } from '../../core/trust/from-config.ts';
import { AgentGate } from '../ingest/agent-gate.ts';
import { likelyQueues } from '../console/incident-detail.ts';
import type { RedisModule } from './redis-module.ts';

// The receiver's side of the job store: the dispatcher that seals and stores new jobs (batched,
// deduplicated, indexed for the console), and the store's reads over the same queues.

export interface JobsModule {
  dispatcher: Dispatcher;
  /** What every ingest passes before the dispatcher: jobs newer than a queue's agent are held (ingest/agent-gate.ts). */
  gate: AgentGate;
  jobs: JobStore;
  incidents: IncidentIndex;
  /** Where the console's records put a job id: one queue read instead of one per queue. */
  likely: (id: string) => Promise<(string | undefined)[]>;
  board: (basePath: string) => QueueBoard;
  close(): Promise<void>;
}

export function startJobs(
  config: Pick<ReceiverConfig, 'queuePrefix' | 'enqueueTimeoutMs' | 'dedupWindowMs'> & Parameters<typeof breakerCapsFromConfig>[0],
  log: Logger,
  r: RedisModule,
  trust: Trust,
): JobsModule {
  const { redis, replicaAck } = r;
  const breakers = new Breakers(redis, config.queuePrefix);
  const caps = breakerCapsFromConfig(config);
  const incidents = new IncidentIndex(redis, config.queuePrefix);
  const mirrors = redis.isCluster ? new ControlMirrors(redis, config.queuePrefix) : undefined;
  const dispatcher = new Dispatcher(redis, {
    prefix: config.queuePrefix,
    timeoutMs: config.enqueueTimeoutMs,
    sealer: trust.sealer,
    sealTtlMs: trust.ttlMs,
    ...(replicaAck ? { replicaAck } : {}),
    dedupWindowMs: config.dedupWindowMs,
    // Every new job once, whichever way it came (webhook or watch), one line per Redis call.
    onStored: (jobs) => log.info({ stored: jobs.map((j) => ({ id: j.id, queue: j.queue, runbook: j.runbook })) }, 'jobs stored'),
    // and into the console's index of incidents, in the batch's own script call.
    index: incidents,
    onIndexError: (err) => log.warn({ err: err.message }, "the console's incident index missed a batch"),
    // Each new node job's node counted towards the storm breaker here, where it is stored: its agent
    // then counts nothing at the start (an enrolled agent's ask per job saved, bench/README.md).
    countNodes: async (starts) => {
      const trip = await breakers.recordNodesActivity(caps, starts);
      if (trip) log.error({ breaker: 'storm', why: trip.why }, 'storm breaker tripped: destructive steps stop fleet-wide until it is reset');
    },
    // A Cluster's agents read the controls from their queue's copy: a new node's is made before its first job.
    ...(mirrors ? { prepareQueues: (queues: string[]) => mirrors.sync(queues) } : {}),
  });
  const queue = (name: string) => dispatcher.queue(name);
  return {
    dispatcher,
    gate: AgentGate.onRedis(redis, config.queuePrefix, { log }),
    jobs: new BullJobStore({ redis, prefix: config.queuePrefix, queue }),
    incidents,
    likely: likelyQueues({ redis, prefix: config.queuePrefix, incidents }),
    board: createQueueBoard(queue),
    close: () => dispatcher.close(),
  };
}
