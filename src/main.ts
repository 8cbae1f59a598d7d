import { createLogger } from './observability/logger.ts';
import { runMain } from './process/run-main.ts';
import { startReceiver } from './receiver.ts';

// `npm run receiver`: the HTTP receiver alone, configured from the environment.

const log = createLogger('receiver', undefined, { buffered: true });
await runMain(log, (config) => {
  if (config.tokens.length === 0) log.warn('VOLUME_MEDIC_TOKEN is not set: webhooks are accepted without authentication');
  return startReceiver(config, { log });
});
