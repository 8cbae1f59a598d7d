import { ConfigError, loadConfig } from './config/load.ts';
import { createLogger } from './observability/logger.ts';
import { startReceiver } from './receiver.ts';

// `npm run receiver`: the HTTP receiver alone, configured from the environment.

const log = createLogger('receiver');
try {
  const config = loadConfig();
  log.level = config.logLevel;
  if (config.tokens.length === 0) log.warn('VOLUME_MEDIC_TOKEN is not set: webhooks are accepted without authentication');
  const receiver = await startReceiver(config, { log });
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      log.info({ signal: sig }, 'shutting down');
      void receiver.close().then(() => process.exit(0));
    });
  }
} catch (err) {
  if (err instanceof ConfigError) {
    log.fatal(err.message);
    process.exit(2);
  }
  throw err;
}
