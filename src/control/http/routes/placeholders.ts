import { type Response, Router } from 'express';
import { z } from 'zod';
import { RemediationJob, type LocalPvPlaceholderJob } from '../../../core/catalogue/jobs.ts';
import { idempotencyKey } from '../../../core/catalogue/idempotency-keys.ts';
import { DiskLinkPath, NodeName, ObjectName } from '../../../core/catalogue/names.ts';
import type { ControlsStore } from '../../../adapters/controls/controls-store.ts';
import { describeZodError } from '../../ingest/zod-error.ts';
import { type JobEnqueue, StoreUnavailableError } from '../../../core/jobs/job-store.ts';
import { operatorOf } from '../operator-gate.ts';
import type { RedisConnection } from '../../../adapters/redis/redis.ts';
import { placeholderList } from '../../console/placeholder-list.ts';

// An operator's release of a Local PV placeholder. The agent releases a placeholder by
// itself once the real disk is back; this is for the other cases (the disk was replaced, or will
// not return) and therefore detaches WITHOUT the disk check: it must say `force: true` and why;
// who asks is the verified operator (a `by` in the body is ignored); the stored request goes to
// the audit trail (each step it takes does too).
// A checked release (POST /v1/placeholders/release-if-back, what `volume-medic prepare-uninstall`
// asks) is the detector's release the agent asks for by itself once the disk is back: same key (the
// two fold), same checks in the runbook (the disk back, nothing holding the loop device), so an
// operator can ask for it at any time and it changes nothing while either is not so.
// GET /v1/placeholders lists what the agents report attached (src/control/console/placeholder-list.ts).

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

const CheckedBody = z.object({ node: NodeName, pv: ObjectName, path: DiskLinkPath });

export interface PlaceholderRouteDeps {
  redis: RedisConnection;
  prefix: string;
  dispatcher: Pick<JobEnqueue, 'enqueue'>;
  audit: Pick<ControlsStore, 'audit'>;
  retryAfterSeconds: number;
}

export function placeholderRoutes(deps: PlaceholderRouteDeps): Router {
  const r = Router();
  r.get('/v1/placeholders', async (_req, res) => res.json(await placeholderList(deps.redis, deps.prefix)));
  r.post('/v1/placeholders/release-if-back', async (req, res) => {
    const b = CheckedBody.safeParse(req.body ?? {});
    if (!b.success) return res.status(400).json({ error: describeZodError(b.error) });
    const { node, pv, path } = b.data;
    const by = operatorOf(res).username;
    const job = RemediationJob.parse({
      version: 1,
      runbook: 'local-pv-placeholder',
      // The key the agent's own check and triage give a detector's release of this PV.
      key: idempotencyKey('lpv-release', [pv, path]),
      target: { node, pv, path },
      action: 'release',
      release: { by: 'detector', force: false },
      evidence: [
        {
          source: 'api',
          summary: `${by} asked for the release of the placeholder of PV ${pv} once its disk is back`.slice(0, 500),
          raw: { node, pv, path, by },
        },
      ],
    }) as LocalPvPlaceholderJob;
    return store(res, deps, job, async () => deps.audit.audit('placeholder-release-checked', `pv/${pv} job/${job.key}`, { by }), by);
  });
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
    return store(res, deps, job, async () => deps.audit.audit('placeholder-release-forced', `pv/${pv} job/${job.key}`, { by, why }), by);
  });
  return r;
}

async function store(res: Response, deps: PlaceholderRouteDeps, job: LocalPvPlaceholderJob, audit: () => Promise<unknown>, by: string): Promise<Response> {
  try {
    const [stored] = await deps.dispatcher.enqueue([job]);
    await audit();
    return res.status(202).json({ accepted: stored, recordedAs: by });
  } catch (err) {
    if (!(err instanceof StoreUnavailableError)) throw err;
    return res.set('Retry-After', String(deps.retryAfterSeconds)).status(503).json({ error: 'the job could not be stored, retry later' });
  }
}
