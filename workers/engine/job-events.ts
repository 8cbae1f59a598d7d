import type { RemediationJob } from '../../src/catalogue/jobs.ts';
import type { EventSubject, JobEventInput } from '../../src/kube/job-events.ts';

// Every job start, refusal, success and failure becomes a Kubernetes Event on the object it
// concerns, so `kubectl describe node/pod/pv` shows what volume-medic did (issue 3). A port: the
// Kubernetes adapter's JobEventRecorder implements it; without cluster access nothing is sent.

export interface JobEventSink {
  /** Never throws: an Event that cannot be written must not fail the remediation. */
  recordJobEvent(input: JobEventInput): Promise<unknown>;
}

/** The object a job's Events belong on: the node, the Local PV, or the pod that cannot mount. */
export function eventSubject(job: RemediationJob): EventSubject | undefined {
  switch (job.runbook) {
    case 'residual-multipath-cleanup':
    case 'rbd-unmap':
      return { kind: 'Node', name: job.target.node };
    case 'local-pv-placeholder':
      return { kind: 'PersistentVolume', name: job.target.pv };
    case 'rbd-stale-mapping':
      return job.target.pod ? { kind: 'Pod', namespace: job.target.pod.namespace, name: job.target.pod.name } : undefined;
    default: {
      const never: never = job;
      return never;
    }
  }
}
