import type { FleetSnapshot } from './fleet-snapshot.ts';
import { JOB_STATES, type JobState } from '../../core/jobs/job-store.ts';

// Jobs by state over every queue, for the console's header: sums over one fleet snapshot
// (fleet-snapshot.ts: one scan of every queue shared by all requests for two seconds).

/** Every state but waiting-children (jobs with children: none of ours has any). */
export const COUNTED_STATES = JOB_STATES.filter((s): s is Exclude<JobState, 'waiting-children'> => s !== 'waiting-children');
export type StateCounts = Record<(typeof COUNTED_STATES)[number], number>;

export function stateCounts(s: FleetSnapshot): { counts: StateCounts; queues: number } {
  const counts = Object.fromEntries(COUNTED_STATES.map((st) => [st, 0])) as StateCounts;
  for (const q of s.queues) for (const st of COUNTED_STATES) counts[st] += q[st];
  return { counts, queues: s.queues.length };
}
