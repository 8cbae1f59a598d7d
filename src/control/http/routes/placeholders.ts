import { Router } from 'express';
import { z } from 'zod';
import { RemediationJob, type LocalPvPlaceholderJob } from '../../../core/catalogue/jobs.ts';
import { idempotencyKey } from '../../../core/catalogue/idempotency-keys.ts';
import { DiskLinkPath, NodeName, ObjectName } from '../../../core/catalogue/names.ts';
import type { ControlsStore } from '../../../adapters/controls/controls-store.ts';
import { describeZodError } from '../../ingest/zod-error.ts';
import { type JobEnqueue, StoreUnavailableError } from '../../../core/jobs/job-store.ts';
import { operatorOf } from '../operator-gate.ts';

// An operator's release of a Local PV placeholder. The agent releases a placeholder by
// itself once the real disk is back; this is for the other cases (the disk was replaced, or will
// not return) and therefore detaches WITHOUT the disk check: it must say `force: true` and why;
// who asks is the verified operator (a `by` in the body is ignored); the stored request goes to
// the audit trail (each step it takes does too).

const ReleaseBody = z.object({
  node: NodeName,
  pv: ObjectName,
  /** The PV's `spec.local.path`. */
  path: DiskLinkPath,
  force: z.literal(true, {
    error:
      'an operator release must carry force: true: it detaches the placeholder without checking that the disk is back (the agent releases it by itself once the disk returns)',
  }),
  why: z.string().trim().min(1, 'say why the placeholder must go without its disk (why)').max(500),
});

export interface PlaceholderRouteDeps {
  dispatcher: Pick<JobEnqueue, 'enqueue'>;
  audit: Pick<ControlsStore, 'audit'>;
  retryAfterSeconds: number;
}

export function placeholderRoutes(deps: PlaceholderRouteDeps): Router {
  const r = Router();
  r.post('/v1/placeholders/release', async (req, res) => {
    const b = ReleaseBody.safeParse(req.body ?? {});
    if (!b.success) return res.status(400).json({ error: describeZodError(b.error) });
    const { node, pv, path, why } = b.data;
    const by = operatorOf(res).username;
    const job: LocalPvPlaceholderJob = RemediationJob.parse({
      version: 1,
      runbook: 'local-pv-placeholder',
      // Who and why are part of the identity: the same request repeated folds, another one does not.
      key: idempotencyKey('lpv-release-forced', [pv, path, by, why]),
      target: { node, pv, path },
      action: 'release',
      release: { by: 'operator', force: true },
      evidence: [
        {
          source: 'api',
          summary: `release of the placeholder of PV ${pv} forced by ${by}: ${why}`.slice(0, 500),
          raw: { node, pv, path, by, why, force: true },
        },
      ],
    }) as LocalPvPlaceholderJob;
    try {
      const [stored] = await deps.dispatcher.enqueue([job]);
      await deps.audit.audit('placeholder-release-forced', `pv/${pv} job/${job.key}`, { by, why });
      return res.status(202).json({ accepted: stored, recordedAs: by });
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      return res.set('Retry-After', String(deps.retryAfterSeconds)).status(503).json({ error: 'the job could not be stored, retry later' });
    }
  });
  return r;
}
