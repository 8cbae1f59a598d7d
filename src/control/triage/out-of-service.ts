import { jobEvidence } from '../../core/catalogue/evidence.ts';
import { idempotencyKey } from '../../core/catalogue/idempotency-keys.ts';
import { OutOfServiceTaintReleaseJob } from '../../core/catalogue/jobs.ts';
import { isNodeName } from '../../core/catalogue/names.ts';
import type { Ignored, NodeOutOfServiceReadySignal } from '../../core/signals/index.ts';

// A Node Ready while tainted out of service: one out-of-service-taint-release job per taint and
// boot (a second power cycle is a new boot, a taint added again a new timeAdded), carrying the
// taint's first sight. The Node watch sends it on every update of such a Node: the queue's
// deduplication window folds the repeats, and after it a refused release is judged again.

type One = { job: OutOfServiceTaintReleaseJob; ignored?: undefined } | { job?: undefined; ignored: Ignored };

export function outOfServiceReady(s: NodeOutOfServiceReadySignal): One {
  const ignore = (reason: Ignored['reason'], detail: string): One => ({ ignored: { reason, detail, source: s.evidence.source } });
  if (!isNodeName(s.node)) return ignore('invalid-node-name', `node ${JSON.stringify(s.node.slice(0, 80))} is not a valid node name`);
  // Only the Node's own status (our watch) says a node is Ready while tainted; nothing posted to us does.
  if (s.evidence.source !== 'k8s-watch') return ignore('event-reporter-not-trusted', 'an out-of-service release is started only by the Node watch');
  const job = OutOfServiceTaintReleaseJob.safeParse({
    version: 1,
    runbook: 'out-of-service-taint-release',
    key: idempotencyKey('oos', [s.node, s.taint.timeAdded ?? s.taint.firstSeenAt, s.bootId ?? '']),
    target: { node: s.node },
    taint: s.taint,
    evidence: [jobEvidence(s.evidence)],
  });
  if (!job.success)
    return ignore('invalid-name', `the out-of-service taint of node ${s.node} does not make a valid job: ${job.error.issues[0]?.message ?? ''}`);
  return { job: job.data };
}
