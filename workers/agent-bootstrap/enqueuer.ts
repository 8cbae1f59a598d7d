import type { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import type { Dispatcher, DispatcherOptions } from '../../src/adapters/jobstore/dispatcher.ts';
import type { AgentConfig } from '../../src/core/config/schema.ts';
import type { Trust } from '../../src/core/trust/from-config.ts';

// Work an agent hands out itself (the node agent's own checks, the cluster worker's node halves):
// sealed with the agent's key and stored with configuration's timeout and deduplication window,
// on a connection its store holds.

export function agentEnqueuer(
  store: AgentStore,
  config: Pick<AgentConfig, 'enqueueTimeoutMs' | 'dedupWindowMs'>,
  trust: Trust,
  more: Omit<DispatcherOptions, 'prefix' | 'timeoutMs' | 'sealer' | 'sealTtlMs' | 'dedupWindowMs'> = {},
  on?: string,
): Dispatcher {
  return store.enqueuer(
    {
      timeoutMs: config.enqueueTimeoutMs,
      sealer: trust.sealer,
      sealTtlMs: trust.ttlMs,
      dedupWindowMs: config.dedupWindowMs,
      ...more,
    },
    on,
  );
}
