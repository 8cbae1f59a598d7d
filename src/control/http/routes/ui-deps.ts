import type { JobStore } from '../../../core/jobs/job-store.ts';
import type { QueueBoard } from '../../../adapters/jobstore/queue-board.ts';
import type { OperatorAuth } from '../../auth/operator-auth.ts';
import type { SessionStore } from '../../auth/session-store.ts';
import type { RedisConnection } from '../../../adapters/redis/redis.ts';
import type { IncidentIndex } from '../../../adapters/jobstore/incident-index.ts';
import type { FleetSnapshots } from '../../console/fleet-snapshot.ts';
import type { CachedRead } from '../../console/cached-read.ts';
import type { Storm } from '../../console/storms.ts';
import type { OperatorActions } from '../../actions/operator-actions.ts';
import type { JobRetry } from '../../actions/job-retry.ts';
import type { JobEventReader } from '../../../adapters/kube/job-event-reader.ts';

// What the dashboard's routes (ui.ts, ui-console.ts) are given: its own file, so the two route
// files do not import each other.

export interface UiDeps {
  redis: RedisConnection;
  prefix: string;
  auth: OperatorAuth;
  sessions: SessionStore;
  /** The job store: jobs, their states and logs. */
  jobs: JobStore;
  /** The read-only queue board for a base path (/ui/queues/). */
  board: (basePath: string) => QueueBoard;
  controls: OperatorActions;
  /** The console's index of incidents (src/adapters/jobstore/incident-index.ts). */
  incidents: IncidentIndex;
  /** The fleet snapshot shared with /v1/fleet and /v1/summary (src/control/console/fleet-snapshot.ts). */
  fleet: FleetSnapshots;
  /** The storms among the newest incidents (src/control/console/storms.ts), shared by the incidents pages. */
  storms: CachedRead<Storm[]>;
  /** Retries of failed jobs (src/control/actions/job-retry.ts); without it the console offers none. */
  retries?: JobRetry;
  /** Reads a job's Kubernetes Events back for its page (src/adapters/kube/job-event-reader.ts). */
  events?: JobEventReader;
  /** Where the jobs' VolumeRemediation records are, for a job's page (src/control/records/). */
  recordsNamespace?: string;
}
