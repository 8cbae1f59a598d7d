import { agents } from './sections/agents.ts';
import { clusterWorker } from './sections/cluster-worker.ts';
import { controls } from './sections/controls.ts';
import { coordination } from './sections/coordination.ts';
import { logging } from './sections/logging.ts';
import { nodeAgent } from './sections/node-agent.ts';
import { queues } from './sections/queues.ts';
import { receiverEnrolment } from './sections/receiver-enrolment.ts';
import { receiverOperators } from './sections/receiver-operators.ts';
import { receiverRecords } from './sections/receiver-records.ts';
import { receiverSources } from './sections/receiver-sources.ts';
import { receiver } from './sections/receiver.ts';
import { redis } from './sections/redis.ts';
import { trust } from './sections/trust.ts';

// Every section, in the reference's order: what several processes share first, then each
// process's own.

export const SECTIONS = [
  logging,
  redis,
  queues,
  trust,
  controls,
  coordination,
  agents,
  receiver,
  receiverOperators,
  receiverSources,
  receiverEnrolment,
  receiverRecords,
  nodeAgent,
  clusterWorker,
] as const;

/** Every setting of every section, by key. */
export type AllSettings = typeof logging.settings &
  typeof redis.settings &
  typeof queues.settings &
  typeof trust.settings &
  typeof controls.settings &
  typeof coordination.settings &
  typeof agents.settings &
  typeof receiver.settings &
  typeof receiverOperators.settings &
  typeof receiverSources.settings &
  typeof receiverEnrolment.settings &
  typeof receiverRecords.settings &
  typeof nodeAgent.settings &
  typeof clusterWorker.settings;
