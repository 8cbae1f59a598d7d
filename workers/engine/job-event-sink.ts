import type { RemediationJob } from '../../src/core/catalogue/jobs.ts';
import { jobEventSubject, type JobEventInput } from '../../src/adapters/kube/job-events.ts';

// Every job start, refusal, success, failure, wait (approval, parked) and dry-run plan becomes a Kubernetes Event on the object it
// concerns, so `kubectl describe node/pod/pv` shows what volume-medic did. A port: the
// Kubernetes adapter's JobEventRecorder implements it; without cluster access nothing is sent.

export interface JobEventSink {
  /**
   * Never throws: an Event that cannot be written must not fail the remediation. With `job`, the
   * Event goes on its volume's claim too (local-pv-placeholder, rbd-stale-mapping).
   */
  recordJobEvent(input: JobEventInput, job?: RemediationJob): Promise<unknown>;
}

/** The object a job's Events belong on (one definition, shared with the console that reads them back). */
export const eventSubject = jobEventSubject;
