import { ConfigError } from '../../src/config/load.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { runMain } from '../../src/process/run-main.ts';
import { createNodeAgent } from './agent.ts';
import { defaultNodeRegistry } from './registry.ts';

// `npm run node-agent`: the node agent, configured from the environment. Refuses to start
// without NODE_NAME (in a DaemonSet it comes from spec.nodeName). On SIGTERM it finishes the
// current step, then stops; an unfinished job is taken again and resumes from its journal.

const log = createLogger('node-agent');
await runMain(log, (config) => {
  if (!config.nodeName) throw new ConfigError('NODE_NAME is required: the node agent serves exactly one node (set it from spec.nodeName)');
  const agent = createNodeAgent({ config, registry: defaultNodeRegistry(config, log), log: log.child({ node: config.nodeName }) });
  log.info({ node: config.nodeName, defaultMode: config.defaultMode, modes: config.runbookModes }, 'node agent started');
  return agent;
});
