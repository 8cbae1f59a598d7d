import type { KubeConfig } from '@kubernetes/client-node';
import { Counter, type Registry } from 'prom-client';
import { CustomRecords } from '../../adapters/kube/custom-records.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import { ownNamespace } from '../fleet/fleet-exporter.ts';
import type { JobsModule } from './jobs-module.ts';
import { RecordSync } from '../records/record-sync.ts';
import { redisRecordJobs } from '../records/records-source.ts';
import { RECORD_GROUP, RECORD_PLURAL, RECORD_VERSION } from '../records/volume-remediation.ts';

// RECORDS: the VolumeRemediation records (src/control/records/record-sync.ts), kept by the one
// receiver that leads the fleet-metrics Lease, every RECORD_SYNC_SECONDS, never on a job's path.
// The others forget what they knew, so a new leader lists the records afresh.

export interface RecordsModule {
  /** Where the records are: the console names a job's record there. */
  namespace: string;
  close(): Promise<void>;
}

export interface RecordsDeps {
  kubeConfig: KubeConfig | undefined;
  /** Default: the pod's own (fleet-exporter.ts ownNamespace). */
  namespace?: string | undefined;
  leading: () => boolean;
  redis: RedisConnection;
  jobs: Pick<JobsModule, 'jobs' | 'incidents'>;
  /** Where its counters go (the receiver's /metrics). */
  registry?: Registry;
  now?: () => number;
}

function recordMetrics(registry: Registry | undefined) {
  const registers = registry ? [registry] : [];
  return {
    writes: new Counter({
      name: 'volume_medic_records_writes_total',
      help: 'VolumeRemediation writes by this receiver (the Lease holder): create, status (a merge patch of the status subresource), delete.',
      labelNames: ['write'],
      registers,
    }),
    rounds: new Counter({
      name: 'volume_medic_records_rounds_total',
      help: 'Record sync rounds by outcome: ok, failed (the CRD not installed, no RBAC, the API server or Redis unreachable).',
      labelNames: ['outcome'],
      registers,
    }),
  };
}

export function startRecords(config: ReceiverConfig, log: Logger, d: RecordsDeps): RecordsModule | undefined {
  if (!config.records || !d.kubeConfig) return undefined;
  const namespace = d.namespace ?? ownNamespace(d.kubeConfig);
  const sync = new RecordSync({
    records: new CustomRecords(d.kubeConfig, { group: RECORD_GROUP, version: RECORD_VERSION, plural: RECORD_PLURAL, namespace }),
    jobs: redisRecordJobs(d.redis, config.queuePrefix, d.jobs.incidents, d.jobs.jobs),
    namespace,
    consoleUrl: config.consoleUrl?.replace(/\/+$/, ''),
    retentionMs: config.recordRetentionHours * 3_600_000,
    ...(d.now ? { now: d.now } : {}),
    log,
  });
  const m = recordMetrics(d.registry);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const loop = (): void => {
    running = (async () => {
      if (!d.leading()) return sync.reset();
      const c = await sync.round();
      m.rounds.inc({ outcome: 'ok' });
      m.writes.inc({ write: 'create' }, c.created);
      m.writes.inc({ write: 'status' }, c.patched);
      m.writes.inc({ write: 'delete' }, c.deleted);
      if (c.created + c.patched + c.deleted > 0) log.debug(c, 'VolumeRemediation records synced');
    })()
      .catch((err: Error) => {
        // The CRD not installed (404) or no RBAC (403): said each round, nothing else is affected.
        sync.reset();
        m.rounds.inc({ outcome: 'failed' });
        log.warn({ err: err.message }, 'could not sync the VolumeRemediation records');
      })
      .finally(() => {
        running = undefined;
        if (timer) timer = setTimeout(loop, config.recordSyncSeconds * 1000).unref();
      });
  };
  timer = setTimeout(loop, 0).unref();
  return {
    namespace,
    close: async () => {
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
