import type { JobOf, RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from './registry.ts';

// A registry whose runbooks (and what they load: the host's command runner, their parsers and
// planners) are imported on the first job, not at start: an idle agent holds only what waiting
// for work needs (bench:agent-rss). The names are known up front, so a runbook this agent does
// not carry still fails as `not implemented` without loading anything.

export function lazyRegistry(names: readonly RunbookName[], load: () => Promise<RunbookRegistry>): RunbookRegistry {
  let loading: Promise<RunbookRegistry> | undefined;
  const loaded = (): Promise<RunbookRegistry> => {
    loading ??= load().catch((err: unknown) => {
      // A failed import is tried again by the next job (its retry), not remembered forever.
      loading = undefined;
      throw err;
    });
    return loading;
  };
  const registry: RunbookRegistry = {};
  for (const name of names) {
    const handler = async (job: JobOf<typeof name>, ctx: RunbookContext) => {
      const real = (await loaded())[name] as RunbookHandler<typeof name> | undefined;
      if (!real) throw new Error(`runbook ${name}: listed for this agent but not in the registry it loaded`);
      return real(job, ctx);
    };
    (registry as Record<RunbookName, unknown>)[name] = handler;
  }
  return registry;
}
