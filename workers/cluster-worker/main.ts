import { CLUSTER_QUEUE } from '../../src/catalogue/queues.ts';
import { ConfigError, loadConfig, modeOf } from '../../src/config/load.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createRunbookWorker } from '../engine/runbook-worker.ts';

// `npm run cluster-worker`: runs cluster-side runbooks (where Ceph credentials are). Until the
// RBD runbook exists its jobs fail visibly as `not implemented`.

const log = createLogger('cluster-worker');
try {
  const config = loadConfig();
  log.level = config.logLevel;
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
  });
  log.info('cluster worker started');
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => void worker.close().then(() => process.exit(0)));
  }
} catch (err) {
  if (err instanceof ConfigError) {
    log.fatal(err.message);
    process.exit(2);
  }
  throw err;
}
