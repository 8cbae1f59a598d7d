import { CLUSTER_QUEUE } from '../../src/catalogue/queues.ts';
import { modeOf } from '../../src/config/load.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { runMain } from '../../src/process/run-main.ts';
import { createRunbookWorker } from '../engine/runbook-worker.ts';
import { controlsFromConfig } from '../engine/job-controls.ts';

// `npm run cluster-worker`: runs cluster-side runbooks (where Ceph credentials are). Until the
// RBD runbook exists its jobs fail visibly as `not implemented`.

const log = createLogger('cluster-worker');
await runMain(log, (config) => {
  const worker = createRunbookWorker({
    queue: CLUSTER_QUEUE,
    redisUrl: config.redisUrl,
    prefix: config.queuePrefix,
    ranOn: 'cluster-worker',
    registry: {},
    modeOf: (runbook) => modeOf(config, runbook),
    accepts: () => undefined,
    lockDurationMs: config.lockDurationMs,
    log,
    controls: controlsFromConfig(config),
  });
  log.info('cluster worker started');
  return worker;
});
