import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { AgentConfig } from '../../src/core/config/schema.ts';
import { enrolUntilDone, type EnrolledKeys, type EnrolOptions } from '../engine/enrolled-keys.ts';

// ENROL_URL: an agent's keys (and a node agent's own Redis user) come from the receiver, for its
// own queue only. Without it the keys come from SIGNING_KEYS_DIR and Redis from configuration.

/** Who enrols: a node agent for its node (its own Redis user), or the cluster worker. */
export type Enrollee = { as: 'node-agent'; node: string } | { as: 'cluster-worker' };

export interface Enrolment<C extends AgentConfig = AgentConfig> {
  /** The configuration to run with: a node agent's Redis user from enrolment in place of configuration's. */
  config: C;
  enrolled?: EnrolledKeys;
}

/** `enrol`: the round trip (default the receiver's, over HTTP; tests answer it themselves). */
export async function enrolFromConfig<C extends AgentConfig>(given: C, who: Enrollee, log: Logger, enrol?: EnrolOptions['enrol']): Promise<Enrolment<C>> {
  if (!given.enrolUrl) return { config: given };
  const node = who.as === 'node-agent' ? who.node : undefined;
  const enrolled = await enrolUntilDone({
    target: { url: given.enrolUrl, tokenFile: given.enrolTokenFile, ...(given.enrolCaFile ? { caFile: given.enrolCaFile } : {}) },
    request: node ? { as: 'node-agent', node } : { as: 'cluster-worker' },
    log: log.child({ ...(node ? { node } : {}), component: 'enrolment' }),
    ...(enrol ? { enrol } : {}),
    // A new Redis password needs new connections: stop as on SIGTERM, and the DaemonSet starts this again.
    ...(node
      ? {
          onRedisChanged: () => {
            log.warn({ node }, 'enrolment handed out another Redis password; restarting to use it');
            process.kill(process.pid, 'SIGTERM');
          },
        }
      : {}),
  });
  const user = node ? enrolled.redis() : undefined;
  return { config: user ? { ...given, redisUsername: user.username, redisPassword: user.password } : given, enrolled };
}
