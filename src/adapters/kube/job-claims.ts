import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { EventSubject } from './event-writer.ts';
import type { ClaimOf } from './job-events.ts';
import type { ClusterLookups, NamespacedName } from './lookups.ts';

// The PVC behind a job's volume, for the Events an application owner reads on their claim: a
// Local PV's claimRef (the node agent reads the PV), the claim of the PV that holds an RBD image
// (the cluster worker lists PVs). A process passes the lookups its role has; a job whose volume
// it cannot look up has no claim here.

const claimSubject = (c: NamespacedName | undefined): EventSubject | undefined =>
  c ? { kind: 'PersistentVolumeClaim', namespace: c.namespace, name: c.name } : undefined;

export function claimOfJob(lookups: Partial<Pick<ClusterLookups, 'persistentVolume' | 'persistentVolumes'>>): ClaimOf {
  return async (job: RemediationJob) => {
    if (job.runbook === 'local-pv-placeholder' && lookups.persistentVolume) return claimSubject((await lookups.persistentVolume(job.target.pv))?.claim);
    if (job.runbook === 'rbd-stale-mapping' && lookups.persistentVolumes) {
      const { pool, image } = job.target;
      const pv = (await lookups.persistentVolumes()).find((v) => v.rbd?.pool === pool && v.rbd.image === image);
      return claimSubject(pv?.claim);
    }
    return undefined;
  };
}
