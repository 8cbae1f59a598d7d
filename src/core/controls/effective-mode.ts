import type { Mode } from '../catalogue/result.ts';
import type { ModeOverride } from './records.ts';

// A job runs in enforce only when both its runbook and its node allow it. The runbook's mode is
// the API override if any, else configuration (RUNBOOK_MODES, DEFAULT_MODE). A node can hold
// its agent to dry-run by API override, or by its node label `volume-medic.io/mode=dry-run`;
// an API override on the node wins over the label (the operator's later, explicit word).
// Pure, so it is tested on data; the worker resolves it at each job's start.

export const NODE_MODE_LABEL = 'volume-medic.io/mode';

export interface ModeInputs {
  runbook: string;
  node?: string;
  configured: Mode;
  runbookOverride?: ModeOverride;
  nodeOverride?: ModeOverride;
  nodeLabel?: string;
}

export interface EffectiveMode {
  mode: Mode;
  /** One line a human reads in the job's result and log. */
  why: string;
}

const by = (o: ModeOverride): string => `set by ${o.by} at ${o.at}${o.why ? ` (${o.why})` : ''}`;

export function effectiveMode(i: ModeInputs): EffectiveMode {
  const runbook = i.runbookOverride
    ? { mode: i.runbookOverride.mode, why: `runbook ${i.runbook} ${i.runbookOverride.mode} ${by(i.runbookOverride)}` }
    : { mode: i.configured, why: `runbook ${i.runbook} ${i.configured} by configuration` };
  const labelMode = i.nodeLabel === 'dry-run' || i.nodeLabel === 'enforce' ? i.nodeLabel : undefined;
  const node = i.nodeOverride
    ? { mode: i.nodeOverride.mode, why: `node ${i.node} ${i.nodeOverride.mode} ${by(i.nodeOverride)}` }
    : labelMode
      ? { mode: labelMode, why: `node ${i.node} ${labelMode} by its label ${NODE_MODE_LABEL}` }
      : undefined;
  if (runbook.mode === 'dry-run') return { mode: 'dry-run', why: runbook.why };
  if (node?.mode === 'dry-run') return { mode: 'dry-run', why: node.why };
  return { mode: 'enforce', why: node ? `${runbook.why}; ${node.why}` : runbook.why };
}
