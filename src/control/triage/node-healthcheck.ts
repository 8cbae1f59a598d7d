import { jobEvidence } from '../../core/catalogue/evidence.ts';
import { idempotencyKey } from '../../core/catalogue/idempotency-keys.ts';
import type { ResidualMultipathJob } from '../../core/catalogue/jobs.ts';
import { isNodeName } from '../../core/catalogue/names.ts';
import type { Ignored, NodeRemediationRequestedSignal } from '../../core/signals/index.ts';
import type { LookupsOf } from '../../adapters/kube/rbac.ts';

// A VolumeMedicRemediation (NodeHealthCheck's External Remediation object) for node X: one
// residual-multipath-cleanup job for X per object (its uid), corroborated against the Node as a
// posted recovery is, except that the node is expected to be unhealthy (that is why NHC asked):
// the Node must exist, and its current boot binds the job. Whoever may create these objects (NHC
// through its aggregated role, cluster admins) can start at most one cleanup per object; the
// runbook's own interlocks decide what, if anything, it removes.

type One = { job: ResidualMultipathJob; ignored?: undefined } | { job?: undefined; ignored: Ignored };

/** The job's key: the object's uid alone, so a relist, a resync or a second receiver make the same job. */
export const remediationJobKey = (uid: string): string => idempotencyKey('nhc', [uid]);

/** Says why the object makes no job; a failed Node lookup throws (the watch tries again later, nothing is decided). */
export async function nodeRemediationRequested(s: NodeRemediationRequestedSignal, lookups: LookupsOf<'receiver'>): Promise<One> {
  const ignore = (reason: Ignored['reason'], detail: string): One => ({ ignored: { reason, detail, source: s.evidence.source } });
  if (!isNodeName(s.node)) return ignore('invalid-node-name', `node ${JSON.stringify(s.node.slice(0, 80))} is not a valid node name`);
  // Only the receiver's own watch on VolumeMedicRemediation objects makes this signal.
  if (s.evidence.source !== 'node-healthcheck')
    return ignore('event-reporter-not-trusted', 'a NodeHealthCheck remediation is started only by the VolumeMedicRemediation watch');
  if (!/^[0-9a-f-]{1,64}$/i.test(s.remediation.uid))
    return ignore('invalid-name', `uid ${JSON.stringify(s.remediation.uid.slice(0, 80))} is not an object uid`);
  const node = await lookups.node(s.node);
  if (!node) return ignore('node-status-disagrees', `the cluster has no Node ${s.node}`);
  const bootId = node.bootId && /^[A-Za-z0-9-]{1,64}$/.test(node.bootId) ? node.bootId : undefined;
  return {
    job: {
      runbook: 'residual-multipath-cleanup',
      version: 1,
      key: remediationJobKey(s.remediation.uid),
      target: { node: s.node },
      ...(bootId ? { bootId } : {}),
      evidence: [jobEvidence(s.evidence)],
    },
  };
}
