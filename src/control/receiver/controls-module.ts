import { breakerCapsFromConfig } from '../../adapters/controls/breakers.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import { CONTROL_RESEAL_MS } from '../../core/controls/sealed-records.ts';
import type { Trust } from '../../core/trust/from-config.ts';
import { JobRetry } from '../actions/job-retry.ts';
import { OperatorActions } from '../actions/operator-actions.ts';
import type { JobsModule } from './jobs-module.ts';
import type { RedisModule } from './redis-module.ts';

// The operator's controls as the receiver issues them: modes, pauses, approvals, breakers and
// retries, each sealed with the control key (src/core/trust/control-keys.ts); standing modes and
// pauses sealed again by every replica long before their short seals lapse.

export interface ControlsModule {
  actions: OperatorActions;
  retries: JobRetry;
  close(): void;
}

export function startControls(config: ReceiverConfig, log: Logger, r: RedisModule, j: JobsModule, trust: Trust): ControlsModule {
  /** When each untrusted record was last logged (bounded: cleared at 1,000 keys). */
  const told = new Map<string, number>();
  const actions = new OperatorActions({
    redis: r.redis,
    prefix: config.queuePrefix,
    jobs: j.jobs,
    caps: breakerCapsFromConfig(config),
    approvalTtlMs: config.approvalTtlSeconds * 1000,
    configuredModes: { default: config.defaultMode, runbooks: config.runbookModes },
    // Where a job's approval record lives (its queue's keys), for a job no parked record names.
    locate: async (id) => (await j.jobs.find(id, j.likely))?.queue,
    trust: {
      ...(trust.controls.sealer ? { sealer: trust.controls.sealer } : {}),
      ring: trust.controls.ring,
      allowUnsigned: trust.allowUnsigned,
      // The fleet audit list's entries sealed with its work key; every list checked with the roots.
      audit: { ...(trust.sealer ? { sealer: trust.sealer } : {}), roots: trust.ring },
      onUntrusted: (u) => {
        // Once per record and reason every 10 minutes: the relay (control-relay.ts) reads the same
        // fields again at every agent's job start, and a record put back stays put back.
        const key = `${u.kind}/${u.field.slice(0, 200)}/${u.reason}`;
        const at = Date.now();
        if ((told.get(key) ?? Number.NEGATIVE_INFINITY) > at - 600_000) return;
        if (told.size >= 1000) told.clear();
        told.set(key, at);
        log.warn(
          { kind: u.kind, field: u.field.slice(0, 200), reason: u.reason, detail: u.detail },
          'untrusted control record ignored (not written through the API)',
        );
      },
    },
  });
  // A compare-and-set: the first replica wins, a newer decision is never undone.
  // Then every node queue's copy of them (a Cluster's agents read those: control-mirrors.ts).
  const reseal = (): void => {
    actions.store
      .resealStanding()
      .catch((err: Error) => log.warn({ err: err.message }, 'could not seal the standing controls again; they lapse if no replica does'))
      .then(() => actions.store.mirrors?.sync())
      .catch((err: Error) =>
        log.warn({ err: err.message }, "could not copy the controls into the node queues' slots; agents read the shared ones once their copy is stale"),
      );
  };
  reseal();
  const resealTimer = setInterval(reseal, CONTROL_RESEAL_MS);
  resealTimer.unref();
  // An operator's retry: a new job for the same work, sealed afresh.
  const retries = new JobRetry({
    jobs: j.jobs,
    store: actions.store,
    index: j.incidents,
    likely: j.likely,
    trust: { ring: trust.ring, ...(trust.sealer ? { sealer: trust.sealer } : {}), ttlMs: trust.ttlMs, allowUnsigned: trust.allowUnsigned },
  });
  return { actions, retries, close: () => clearInterval(resealTimer) };
}
