import { ConfigError } from '../core/config/load.ts';
import { createLogger } from '../adapters/observability/logger.ts';
import { runMain } from '../adapters/process/run-main.ts';
import { startReceiver } from './receiver.ts';

// `npm run receiver`: the HTTP receiver alone, configured from the environment.

const log = createLogger('receiver', undefined, { buffered: true });
await runMain('receiver', log, (config) => {
  // Fail closed: a receiver without a token would take enforce, approvals and jobs from anyone.
  if (config.tokens.length === 0) {
    if (!config.allowUnauthenticated) {
      throw new ConfigError(
        'no token: set VOLUME_MEDIC_TOKEN, or VOLUME_MEDIC_TOKEN_FILE to a file with at least one token (an empty file counts as none); ALLOW_UNAUTHENTICATED=true runs without authentication',
      );
    }
    log.error('ALLOW_UNAUTHENTICATED=true and no token: the webhook routes are open to anyone who can reach this port (operator routes follow OPERATOR_AUTH)');
  }
  // Operators without identity only as a deliberate, double opt-in for a local trial.
  if (config.operatorAuth === 'insecure') {
    if (!config.allowUnauthenticated)
      throw new ConfigError(
        'OPERATOR_AUTH=insecure makes anyone who reaches this port an operator with every verb (enforce, approve): it needs ALLOW_UNAUTHENTICATED=true as well',
      );
    log.error('OPERATOR_AUTH=insecure: anyone who can reach this port may set modes, approve, pause and release placeholders, recorded as insecure-anonymous');
  }
  // Tokens and the dashboard's cookie never cross the network in clear unless asked for by name.
  if (!config.tlsCertFile) {
    if (!config.allowPlaintextHttp)
      throw new ConfigError(
        'no TLS certificate: set TLS_CERT_FILE and TLS_KEY_FILE (PEM; the chart mounts its Secret volume-medic-receiver-tls), or ALLOW_PLAINTEXT_HTTP=true to serve plain HTTP (tokens and cookies then cross the network in clear)',
      );
    log.warn('ALLOW_PLAINTEXT_HTTP=true: bearer tokens, operator tokens and the dashboard cookie cross the network in clear');
  }
  if (process.env['DASHBOARD_WRITE']) log.warn('DASHBOARD_WRITE is ignored: the queue board is always read-only; decide on jobs on their /ui/jobs/<id> page');
  return startReceiver(config, { log });
});
