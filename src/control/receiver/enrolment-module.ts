import type { KubeConfig } from '@kubernetes/client-node';
import { ControlMirrors } from '../../adapters/controls/control-mirrors.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { knownQueuesKey } from '../../adapters/redis/known-queues.ts';
import { NodeGenerations } from '../../adapters/redis/node-generations.ts';
import { nodeUserName } from '../../adapters/redis/node-user-acl.ts';
import { NodeRedisUsers } from '../../adapters/redis/node-redis-users.ts';
import { ConfigError } from '../../core/config/load.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import type { GenerationTable } from '../../core/trust/key-generations.ts';
import type { Trust } from '../../core/trust/from-config.ts';
import { enrolmentFromConfig } from '../enrolment/from-config.ts';
import type { RedisModule } from './redis-module.ts';
import type { ScriptPreloadModule } from './script-preload-module.ts';

// Node agents and the cluster worker trade their pod's token for their own queue's keys; with
// REDIS_NODE_USERS each enrolled node also gets its own Redis user on every server, kept there
// by a watch. An enrolment is answered once the agents' scripts are on every server too: a Redis
// that restarted lost both, and its agents enrol again at once (their WRONGPASS). Credentials are
// handed out at each node's generation (`table`, the same one the receiver's roots derive with:
// src/core/trust/key-generations.ts).

export interface EnrolmentModule {
  enrolment?: ReturnType<typeof enrolmentFromConfig>;
  nodeUsers?: NodeRedisUsers;
  /** Each node's credential generation in Redis (with enrolment). */
  generations?: NodeGenerations;
  close(): Promise<void>;
}

export function startEnrolment(
  config: ReceiverConfig,
  log: Logger,
  r: RedisModule,
  trust: Trust,
  access: KubeConfig | undefined,
  scripts: ScriptPreloadModule,
  table: GenerationTable | undefined,
): EnrolmentModule {
  if (config.redisNodeUsers && config.enrolNodeAgents.length === 0)
    throw new ConfigError('REDIS_NODE_USERS=true needs enrolment (ENROL_NODE_AGENTS): agents learn their Redis user when they enrol');
  const nodeUsers = config.redisNodeUsers
    ? new NodeRedisUsers({ servers: scripts.servers, prefix: config.queuePrefix, log: log.child({ component: 'node-redis-users' }) })
    : undefined;
  nodeUsers?.watch();
  const mirrors = r.redis.isCluster ? new ControlMirrors(r.redis, config.queuePrefix) : undefined;
  const generations = new NodeGenerations(r.redis, config.queuePrefix);
  const enrolment = enrolmentFromConfig(config, trust.ring, access, {
    generations,
    ...(table ? { table } : {}),
    registry: {
      record: async (queue) => {
        await r.redis.sadd(knownQueuesKey(config.queuePrefix), queue);
        // Its copy of the controls (a Cluster's agents read that: control-mirrors.ts).
        await mirrors?.sync([queue]);
      },
    },
    ...(nodeUsers
      ? {
          redisUsers: {
            userName: nodeUserName,
            // Answered once the primary has it; a server that missed it gets it from the watch.
            ensure: async (node, hash) => {
              // The scripts first (one check shared by every enrolment meanwhile; a failure is
              // logged there and checked again): once the user is back its agent runs scripts.
              await scripts.preload.ensure().catch(() => undefined);
              const res = await nodeUsers.ensure(node, hash);
              if (res.applied.length === 0)
                throw new Error(
                  `no Redis server took the user of node ${node}: ${res.failed
                    .map((f) => `${f.server}: ${f.error}`)
                    .join('; ')
                    .slice(0, 300)}`,
                );
              if (res.failed.length > 0)
                log.warn({ node, failed: res.failed }, "a Redis server missed a node's user; the watch applies it when the server answers");
            },
            remove: async (node) => {
              await nodeUsers.remove(node);
            },
          },
        }
      : {}),
  });
  return {
    ...(enrolment ? { enrolment, generations } : {}),
    ...(nodeUsers ? { nodeUsers } : {}),
    close: async () => {
      await nodeUsers?.close();
    },
  };
}
