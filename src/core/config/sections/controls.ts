import { z } from '../../zod.ts';
import { RunbookName } from '../../catalogue/jobs.ts';
import { list } from '../env-text.ts';
import { AGENTS, EVERY_PROCESS, section, setting } from '../setting.ts';
import { Count, Flag } from '../types.ts';

export const controls = section({
  title: 'Approvals and breakers',
  doc: 'What holds a job before a destructive step: approvals an operator gives, and breakers that trip on too many destructive steps.',
  settings: {
    approvalHighRisk: setting({
      env: 'APPROVAL_HIGH_RISK',
      readers: AGENTS,
      type: () => z._default(Flag, true),
      doc: "Enforce-mode steps flagged high risk (`risk: 'high'`) wait for POST /v1/jobs/:id/approve.",
    }),
    approvalRunbooks: setting({
      env: 'APPROVAL_RUNBOOKS',
      readers: AGENTS,
      type: () => z._default(z.array(RunbookName), []),
      read: list,
      doc: 'Runbooks whose every destructive step waits for approval (comma-separated).',
    }),
    approvalMaxDestructiveSteps: setting({
      env: 'APPROVAL_MAX_DESTRUCTIVE_STEPS',
      readers: AGENTS,
      type: () => z._default(Count(0), 10),
      doc: 'A plan with more destructive steps than this waits for approval before its first one; 0: no limit.',
    }),
    approvalTtlSeconds: setting({
      env: 'APPROVAL_TTL_SECONDS',
      readers: EVERY_PROCESS,
      type: () => z._default(z.coerce.number().check(z.int(), z.positive()), 3600),
      doc: 'An approval request not decided within this expires (the job fails, refused); an approval is good for as long.',
    }),
    breakerNodeDestructivePerHour: setting({
      env: 'BREAKER_NODE_DESTRUCTIVE_PER_HOUR',
      readers: EVERY_PROCESS,
      type: () => z._default(Count(0), 20),
      doc: 'Destructive steps one node may run in any hour before its breaker trips; 0: no cap.',
    }),
    breakerClusterDestructivePerHour: setting({
      env: 'BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR',
      readers: EVERY_PROCESS,
      type: () => z._default(Count(0), 100),
      doc: 'Destructive steps the whole fleet may run in any hour before the cluster breaker trips; 0: no cap.',
    }),
    breakerStormNodes: setting({
      env: 'BREAKER_STORM_NODES',
      readers: EVERY_PROCESS,
      type: () => z._default(Count(0), 5),
      doc: "More nodes than this given new jobs within BREAKER_STORM_WINDOW_SECONDS trips the storm breaker; 0: off. A node counts when the receiver stores a new job for it (a repeat folded into a stored job does not), or when a job no receiver counted starts (an agent's own work, an operator's retry) or one starts more than half the window after it was stored.",
    }),
    breakerStormWindowSeconds: setting({
      env: 'BREAKER_STORM_WINDOW_SECONDS',
      readers: EVERY_PROCESS,
      type: () => z._default(z.coerce.number().check(z.int(), z.positive()), 600),
      doc: "The storm breaker's window.",
    }),
    controlsRecheckSeconds: setting({
      env: 'CONTROLS_RECHECK_SECONDS',
      readers: AGENTS,
      type: () => z._default(z.coerce.number().check(z.positive()), 15),
      doc: 'How often a job parked by a pause, an approval or a breaker looks again.',
    }),
  },
});
