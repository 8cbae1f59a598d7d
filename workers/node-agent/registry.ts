import type { Config } from '../../src/config/schema.ts';
import type { Logger } from '../../src/observability/logger.ts';
import type { RunbookRegistry } from '../runbooks/registry.ts';

// The runbooks this node agent carries. A runbook missing here makes its jobs fail visibly as
// `not implemented` (see engine/runbook-worker.ts), never succeed silently.
export function defaultNodeRegistry(_config: Config, _log: Logger): RunbookRegistry {
  return {};
}
