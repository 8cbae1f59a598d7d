import { Router } from 'express';
import type { ControlsStore } from '../../../adapters/controls/controls-store.ts';
import { markUninstall, UNINSTALL_MARK_TTL_MS } from '../../../adapters/jobstore/uninstall-mark.ts';
import { knownQueuesKey } from '../../../adapters/redis/known-queues.ts';
import type { RedisConnection } from '../../../adapters/redis/redis.ts';
import { operatorOf } from '../operator-gate.ts';

// POST /v1/uninstall/arm: what the chart's pre-delete check asks once the uninstall may go on, with
// nodeAgent.removeHostState. Every node queue gets the uninstall mark (it lapses by itself); an
// agent configured to remove its host state does so when it stops while the mark is there, and
// only when nothing in it still matters (workers/node-agent/host-state-removal.ts). Audited.

export interface UninstallRouteDeps {
  redis: RedisConnection;
  prefix: string;
  audit: Pick<ControlsStore, 'audit'>;
  now?: () => Date;
}

export function uninstallRoutes(deps: UninstallRouteDeps): Router {
  const r = Router();
  r.post('/v1/uninstall/arm', async (_req, res) => {
    const by = operatorOf(res).username;
    const at = (deps.now ?? (() => new Date()))();
    const queues = await deps.redis.smembers(knownQueuesKey(deps.prefix));
    const nodes = await markUninstall(deps.redis, deps.prefix, queues, { at: at.toISOString(), by });
    await deps.audit.audit('uninstall-armed', `nodes/${nodes}`, { by });
    return res.status(200).json({ nodes, expiresAt: new Date(at.getTime() + UNINSTALL_MARK_TTL_MS).toISOString(), recordedAs: by });
  });
  return r;
}
