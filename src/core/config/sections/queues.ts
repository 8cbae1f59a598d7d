import { z } from '../../zod.ts';
import { Mode } from '../../catalogue/result.ts';
import { RunbookName } from '../../catalogue/jobs.ts';
import { queueWindowMs } from '../../catalogue/policy.ts';
import { modes } from '../env-text.ts';
import { AGENTS, EVERY_PROCESS, section, setting } from '../setting.ts';
import { Millis } from '../types.ts';

export const queues = section({
  title: 'Queues and modes',
  doc: 'The jobs every process stores or runs: their key prefix, their deduplication window, and the mode each runbook runs in.',
  settings: {
    queuePrefix: setting({
      env: 'QUEUE_PREFIX',
      readers: EVERY_PROCESS,
      type: () => z._default(z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only')), 'volume-medic'),
      doc: 'BullMQ key prefix, so several installations can share one Redis. No `{}`: the hash tag of every key is in the queue name (`vm-node-{<node>}`), one slot per queue; a tag in the prefix would put the whole installation in one slot of a Cluster.',
    }),
    enqueueTimeoutMs: setting({
      env: 'ENQUEUE_TIMEOUT_MS',
      readers: EVERY_PROCESS,
      type: () => z._default(Millis, 5_000),
      doc: 'How long storing jobs may take before the receiver answers 503 (the agents store the jobs they ask for themselves under the same limit).',
    }),
    dedupWindowSeconds: setting({
      env: 'DEDUP_WINDOW_SECONDS',
      readers: EVERY_PROCESS,
      type: () => z.optional(z.coerce.number().check(z.int(), z.positive())),
      doc: "When set, overrides every runbook's deduplication window (src/core/catalogue/policy.ts); the processes read the window per queue placement as one derived value (`dedupWindowMs`).",
      defaultText: `the runbooks' own: ${queueWindowMs('node') / 60_000} min on node queues, ${queueWindowMs('cluster') / 60_000} min on the cluster queue`,
    }),
    lockDurationMs: setting({
      env: 'LOCK_DURATION_MS',
      readers: AGENTS,
      type: () => z._default(Millis, 30_000),
      doc: "A worker's job lock; a job whose worker died is taken again after about this long.",
    }),
    defaultMode: setting({
      env: 'DEFAULT_MODE',
      readers: EVERY_PROCESS,
      type: () => z._default(Mode, 'dry-run'),
      doc: 'Mode of every runbook not named in RUNBOOK_MODES.',
    }),
    runbookModes: setting({
      env: 'RUNBOOK_MODES',
      readers: EVERY_PROCESS,
      type: () => z._default(z.partialRecord(RunbookName, Mode), {}),
      read: modes,
      doc: 'Per runbook, e.g. `local-pv-placeholder=enforce,residual-multipath-cleanup=dry-run`.',
    }),
  },
});
