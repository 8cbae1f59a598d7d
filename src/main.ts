import { ConfigError } from './config/load.ts';
import { createLogger } from './observability/logger.ts';
import { runMain } from './process/run-main.ts';
import { startReceiver } from './receiver.ts';

// `npm run receiver`: the HTTP receiver alone, configured from the environment.

const log = createLogger('receiver', undefined, { buffered: true });
await runMain(log, (config) => {
  // Fail closed: a receiver without a token would take enforce, approvals and jobs from anyone.
  if (config.tokens.length === 0) {
    if (!config.allowUnauthenticated) {
      throw new ConfigError('no token: set VOLUME_MEDIC_TOKEN, or VOLUME_MEDIC_TOKEN_FILE to a file with at least one token (an empty file counts as none); ALLOW_UNAUTHENTICATED=true runs without authentication');
    }
    log.error('ALLOW_UNAUTHENTICATED=true and no token: every /v1 route, operator actions included, is open to anyone who can reach this port');
  }
  return startReceiver(config, { log });
});
