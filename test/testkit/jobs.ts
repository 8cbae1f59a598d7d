import { Queue } from 'bullmq';
import type { RedisConnection } from '../../src/adapters/redis/redis.ts';
import { BullJobStore, storedJob } from '../../src/adapters/jobstore/bull-job-store.ts';
import { JOB_STATES, type JobState, type JobStore, type StoredJob } from '../../src/core/jobs/job-store.ts';

// Jobs as a test sees them: through the JobStore port (src/core/jobs/job-store.ts) on its BullMQ
// adapter, wired as the receiver wires it (one queue handle per name on the test's connection).
// A test reads jobs here and knows no queue library. A job written straight into Redis (forged,
// unsealed, or with attempts of its own: what reaches an agent past the store) is written with
// test/support/raw-jobs.ts, since going through the store would change what such a test proves;
// the tests of BullMQ's own behaviour keep their Queue (test/.dependency-cruiser.cjs lists them).

/** A stored job whose data a test reads freely (it is the job as stored: the job and its seal). */
export interface TestJob extends StoredJob {
  data: any;
}

export interface TestJobs {
  /** The port itself, for code under test that takes a JobStore (operator actions, the job reader). */
  readonly store: JobStore;
  get(queue: string, id: string): Promise<TestJob | undefined>;
  state(queue: string, id: string): Promise<JobState | 'unknown'>;
  /** Every job on `queue` in one of `states` (default: every state), newest first. */
  list(queue: string, states?: readonly JobState[]): Promise<TestJob[]>;
  /** How many jobs `queue` holds in `states` (default: every state). */
  count(queue: string, states?: readonly JobState[]): Promise<number>;
  /** Closes the queue handles; the connection stays the caller's. */
  close(): Promise<void>;
}

/** The jobs under `prefix` on the test's Redis `connection` (which the caller closes). */
export function testJobs(connection: RedisConnection, prefix: string): TestJobs {
  const handles = new Map<string, Queue>();
  const queue = (name: string): Queue => {
    let q = handles.get(name);
    if (!q) {
      q = new Queue(name, { connection, prefix });
      handles.set(name, q);
    }
    return q;
  };
  const store = new BullJobStore({ redis: connection, prefix, queue });
  const list = async (name: string, states: readonly JobState[] = JOB_STATES): Promise<TestJob[]> =>
    (await queue(name).getJobs([...states])).filter((j) => j !== undefined).map(storedJob);
  return {
    store,
    get: (name, id) => store.get(name, id),
    state: (name, id) => store.state(name, id),
    list,
    count: async (name, states = JOB_STATES) => queue(name).getJobCountByTypes(...states),
    async close() {
      await Promise.allSettled([...handles.values()].map((q) => q.close()));
      handles.clear();
    },
  };
}
