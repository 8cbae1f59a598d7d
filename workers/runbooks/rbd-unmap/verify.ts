import type { RbdUnmapJob } from '../../../src/core/catalogue/jobs.ts';
import { verification, type Check, type Plan, type Verification } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { headMappings, listMappings } from './observe.ts';
import type { UnmapStep } from './step.ts';

// The device is gone: showmapped no longer lists the image, the udev link is gone. Whether the
// watch left the image is a cluster-side fact (no Ceph credentials here): the cluster half that
// handed this job over waits for it (rbd-stale-mapping/verify.ts).

export async function verify(job: RbdUnmapJob, host: Host, plan: Extract<Plan<UnmapStep>, { kind: 'steps' }>): Promise<Verification> {
  const { pool, image } = job.target;
  const left = headMappings(await listMappings(host), pool, image).map((m) => m.device);
  const checks: Check[] = [
    {
      what: `${pool}/${image} is no longer mapped on ${job.target.node}`,
      ok: left.length === 0,
      detail: left.length ? `still mapped: ${left.join(', ')}` : undefined,
    },
  ];
  const link = await host.readlink(`/dev/rbd/${pool}/${image}`);
  checks.push({ what: `/dev/rbd/${pool}/${image} is gone`, ok: link === null, detail: link ?? undefined });
  for (const s of plan.steps) {
    if (s.kind === 'unmap') checks.push({ what: `/dev/${s.device} no longer maps ${pool}/${image}`, ok: !left.includes(s.device) });
  }
  return verification(checks);
}
