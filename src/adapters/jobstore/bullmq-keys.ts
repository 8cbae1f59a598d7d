// BullMQ's Redis layout of one queue (BullMQ 5: `<prefix>:<queue>:<suffix>`, a job's hash at
// `<prefix>:<queue>:<id>`), named in one place. Where our own scripts and pipelines read BullMQ's
// keys directly (the console's scan and job states, agent presence, queue depth, the state filter
// of the incidents list) they take the names from here, so a BullMQ upgrade that moves a key is a
// change to this file and its test (test/int/adapters/jobstore/bullmq-keys.int.test.ts checks it against BullMQ's
// own `toKey`).

/** Where a job in each BullMQ state sits, and whether that key is a list or a sorted set. */
export const STATE_PLACES = {
  waiting: { suffix: 'wait', kind: 'list' },
  paused: { suffix: 'paused', kind: 'list' },
  active: { suffix: 'active', kind: 'list' },
  delayed: { suffix: 'delayed', kind: 'zset' },
  prioritized: { suffix: 'prioritized', kind: 'zset' },
  completed: { suffix: 'completed', kind: 'zset' },
  failed: { suffix: 'failed', kind: 'zset' },
} as const;
export type PlacedState = keyof typeof STATE_PLACES;

/** The keys of `queue` under `prefix`. */
export function queueKeys(prefix: string, queue: string) {
  const base = `${prefix}:${queue}:`;
  const state = (s: PlacedState): string => `${base}${STATE_PLACES[s].suffix}`;
  return {
    /** What every key of the queue starts with (a job's hash is `base + id`). */
    base,
    state,
    wait: state('waiting'),
    paused: state('paused'),
    active: state('active'),
    delayed: state('delayed'),
    prioritized: state('prioritized'),
    completed: state('completed'),
    failed: state('failed'),
    /** Set with a TTL of one stalled interval by a worker's stalled-job check. */
    stalledCheck: `${base}stalled-check`,
    job: (id: string): string => `${base}${id}`,
    /** A job's log lines (BullMQ's addLog). */
    logs: (id: string): string => `${base}${id}:logs`,
    /** What a waiting worker blocks on (BZPOPMIN): "jobs may be waiting". */
    marker: `${base}marker`,
  };
}
