import { agentScripts } from '../../adapters/lua/registry.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { RedisServers } from '../../adapters/redis/redis-servers.ts';
import { ScriptPreload } from '../../adapters/redis/script-preload.ts';
import type { RedisModule } from './redis-module.ts';

// The agents' Lua scripts in every server's script cache (their Redis users may only EVALSHA:
// src/adapters/redis/lua-script.ts), kept there through restarts and topology changes. The
// servers' connections and topology watches are shared with the per-node Redis users
// (enrolment-module.ts), which must reach the same servers on the same occasions.

export interface ScriptPreloadModule {
  servers: RedisServers;
  preload: ScriptPreload;
  close(): void;
}

/** Starts the preload; once Redis answers, the first load is done before this returns (agents started next find the scripts). */
export async function startScriptPreload(log: Logger, r: RedisModule): Promise<ScriptPreloadModule> {
  const servers = new RedisServers({ target: r.target, connectionName: 'volume-medic:receiver:every-server' });
  const preload = new ScriptPreload({ servers, scripts: agentScripts(), log: log.child({ component: 'script-preload' }) });
  const first = preload.watch();
  if (r.redis.status === 'ready')
    await first.catch((err: Error) => log.warn({ err: err.message }, "could not load the agents' Redis scripts yet (checked again)"));
  else first.catch(() => {});
  return {
    servers,
    preload,
    close: () => {
      preload.close();
      servers.close();
    },
  };
}
