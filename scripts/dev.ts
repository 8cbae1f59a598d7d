// `npm start`: the whole thing on one machine, for trying it out. The receiver plus a node
// agent for this machine, every runbook forced to dry-run (plans and reports, changes nothing).
// Redis: REDIS_URL if set; else 127.0.0.1:6379 if it answers; else a private redis-server on a
// free port, started here and stopped on exit.
import { hostname } from 'node:os';
import { ConfigError, loadConfig } from '../src/core/config/load.ts';
import { isNodeName } from '../src/core/catalogue/names.ts';
import { startReceiver } from '../src/control/receiver.ts';
import { createNodeAgent } from '../workers/node-agent/agent.ts';
import { defaultNodeRegistry } from '../workers/node-agent/registry.ts';
import { findOrStartRedis, NoRedisError } from './lib/local-redis.ts';
import { writeSigningKeys } from './lib/signing-keys.ts';
import { trialOutput } from './lib/trial-output.ts';

// At a terminal the lines are for a person (readable, the start-up hint a block of commands);
// piped, they are JSON as every deployed process writes them.
const { log, started } = trialOutput();

try {
  const redis = await findOrStartRedis(process.env['REDIS_URL'] || undefined);
  if (redis.origin === 'local') log.info('using the Redis that answers on 127.0.0.1:6379 (set REDIS_URL to choose another)');
  if (redis.origin === 'private')
    log.info({ url: redis.url }, 'no Redis configured and none answering locally: started a private redis-server (stopped on exit, keeps nothing)');
  const nodeName = process.env['NODE_NAME'] || hostname().toLowerCase();
  if (!isNodeName(nodeName)) throw new ConfigError(`this machine's name "${nodeName}" is not a valid node name; set NODE_NAME`);
  // A trial has no Secret: fresh signing keys in a private temporary directory, so the receiver
  // seals and the agent verifies as deployed (SIGNING_KEYS_DIR, when set, is used instead).
  const keys = process.env['SIGNING_KEYS_DIR'] || writeSigningKeys(undefined);
  const loaded = loadConfig(['receiver', 'node-agent'], { ...process.env, REDIS_URL: redis.url, NODE_NAME: nodeName, SIGNING_KEYS_DIR: keys });
  // A trial on one machine usually has no cluster to ask who an operator is: unless OPERATOR_AUTH
  // says otherwise, anyone reaching the port is operator insecure-anonymous (and says so).
  const operatorAuth = process.env['OPERATOR_AUTH'] ? loaded.operatorAuth : ('insecure' as const);
  if (operatorAuth === 'insecure')
    log.warn(
      "OPERATOR_AUTH=insecure for this trial: anyone who reaches the port may approve, pause and set modes (set OPERATOR_AUTH=kubernetes to use your kubeconfig's cluster)",
    );
  const config = { ...loaded, operatorAuth, defaultMode: 'dry-run' as const, runbookModes: {} };
  log.level = config.logLevel;
  // A trial on one machine: without a token the receiver is open, and says so (the deployed
  // receiver, src/control/main.ts, refuses to start without one unless ALLOW_UNAUTHENTICATED=true).
  if (config.tokens.length === 0) log.warn('no VOLUME_MEDIC_TOKEN: this trial receiver accepts requests without authentication');
  const receiver = await startReceiver(config, { log: log.child({ component: 'receiver' }) });
  const agent = createNodeAgent({
    config,
    registry: defaultNodeRegistry(config, log),
    log: log.child({ component: 'node-agent', node: nodeName }),
  });
  started(receiver.url, nodeName);
  const stop = async (): Promise<void> => {
    await receiver.close();
    await agent.close();
    redis.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
} catch (err) {
  if (err instanceof ConfigError || err instanceof NoRedisError) {
    log.fatal(err.message);
    process.exit(2);
  }
  throw err;
}
