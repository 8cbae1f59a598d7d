import type { Logger } from '../../src/adapters/observability/logger.ts';
import { startProbeServer } from '../../src/adapters/observability/probe-server.ts';
import { runMain } from '../../src/adapters/process/run-main.ts';
import type { AgentConfig, ConfigOf } from '../../src/core/config/schema.ts';
import type { RunbookWorker } from '../engine/runbook-worker.ts';
import { enrolFromConfig, type Enrollee, type Enrolment } from './enrol.ts';

// What every agent process does around its own parts: configuration, enrolment, liveness,
// readiness and /metrics for the kubelet and Prometheus (PROBE_PORT), the "started" line, and on
// SIGTERM a shutdown in order: probes, what runs alongside the worker, the worker (it finishes its
// current step; an unfinished job is taken again and resumes from its journal), the store's
// connections, enrolment's renewals.

export interface AgentParts {
  /** The worker; it closes its store when it closes. */
  worker: RunbookWorker;
  /** What runs alongside it (checks, watches), stopped before it, in this order. */
  alongside: { close(): unknown }[];
  /** The "started" log line. */
  started: { msg: string; fields: object };
}

/** `which` agent: it reads that process's settings only (src/core/config/sections). */
export async function runAgent<P extends 'node-agent' | 'cluster-worker', W extends Enrollee>(
  which: P,
  log: Logger,
  who: (config: ConfigOf<P>) => W,
  compose: (e: Enrolment<ConfigOf<P> & AgentConfig> & { who: W }) => Promise<AgentParts>,
): Promise<void> {
  await runMain(which, log, async (given) => {
    const me = who(given);
    // Both agents read every AgentConfig setting; TypeScript cannot see that through the generic P.
    const enrolment = await enrolFromConfig(given as ConfigOf<P> & AgentConfig, me, log);
    const { config } = enrolment;
    const { worker, alongside, started } = await compose({ ...enrolment, who: me });
    const probes = await startProbeServer({
      port: config.probePort,
      host: config.probeListenAddress,
      log,
      connections: () => worker.store.connections.states(),
      running: () => worker.running(),
      expositions: [worker.metrics.exposition],
    });
    log.info(started.fields, started.msg);
    return {
      close: async () => {
        await probes.close();
        for (const part of alongside) await part.close();
        await worker.close();
        enrolment.enrolled?.close();
      },
    };
  });
}
