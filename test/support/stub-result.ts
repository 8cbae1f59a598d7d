import type { RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../src/core/catalogue/result.ts';

/** What a stand-in runbook (tests, benches, the release fleet's agents) returns: it looked and found nothing to do. */
export const nothingToDo = (runbook: RunbookName, ctx: { mode: RunbookResult['mode']; ranOn: string }, summary = 'stub'): RunbookResult => ({
  runbook,
  mode: ctx.mode,
  outcome: 'nothing-to-do',
  summary,
  facts: null,
  plan: null,
  refusals: [],
  steps: [],
  commands: [],
  ranOn: ctx.ranOn,
});
