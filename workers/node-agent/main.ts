import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createNodeAgent } from './agent.ts';
import { defaultNodeRegistry } from './registry.ts';

// `npm run node-agent`: the node agent, configured from the environment. Refuses to start
// without NODE_NAME (in a DaemonSet it comes from spec.nodeName).

const log = createLogger('node-agent');
try {
  const config = loadConfig();
  log.level = config.logLevel;
  if (!config.nodeName) throw new ConfigError('NODE_NAME is required: the node agent serves exactly one node (set it from spec.nodeName)');
  const agent = createNodeAgent({ config, registry: defaultNodeRegistry(config, log), log: log.child({ node: config.nodeName }) });
  log.info({ node: config.nodeName, defaultMode: config.defaultMode, modes: config.runbookModes }, 'node agent started');
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      log.info({ signal: sig }, 'finishing the current step, then stopping');
      void agent.close().then(() => process.exit(0));
    });
  }
} catch (err) {
  if (err instanceof ConfigError) {
    log.fatal(err.message);
    process.exit(2);
  }
  throw err;
}
