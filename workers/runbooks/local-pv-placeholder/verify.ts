import type { LocalPvPlaceholderJob } from '../../../src/core/catalogue/jobs.ts';
import { verification, type Check, type Plan, type Verification } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { followLink } from '../../host/follow-link.ts';
import { devPath } from '../../host/paths.ts';
import { listLoops } from './loops.ts';
import { PLACEHOLDER_BYTES } from './plan.ts';
import type { PlaceholderStore } from './record-store.ts';
import type { PlaceholderStep } from './step.ts';

// Observes again and compares with what the plan promised: a placed placeholder is a link to a
// 512-byte block device backed by our image and recorded; a released one left none of that.

export async function verify(
  job: LocalPvPlaceholderJob,
  host: Host,
  plan: Extract<Plan<PlaceholderStep>, { kind: 'steps' }>,
  store: PlaceholderStore,
): Promise<Verification> {
  const checks: Check[] = [];
  const loops = await listLoops(host);
  const link = await host.readlink(job.target.path);
  const attach = plan.steps.find((s) => s.kind === 'attach-loop');

  if (attach) {
    const dev = devPath(attach.loop, 'loop');
    const image = host.argPath(attach.image);
    checks.push({ what: `${job.target.path} points at ${dev}`, ok: link === dev, detail: `link: ${link ?? 'none'}` });
    const end = await followLink(host, job.target.path);
    checks.push({ what: `${job.target.path} resolves to a block device`, ok: end.info?.type === 'block', detail: end.path });
    const backing = loops.find((l) => l.loop === attach.loop)?.backFile;
    checks.push({ what: `${dev} is backed by ${image}`, ok: backing === image, detail: `backing: ${backing ?? 'none'}` });
    const size = await host.run(['blockdev', '--getsize64', host.argPath(dev)]);
    checks.push({
      what: `${dev} is ${PLACEHOLDER_BYTES} bytes`,
      ok: size.exitCode === 0 && size.stdout.trim() === String(PLACEHOLDER_BYTES),
      detail: size.stdout.trim() || size.stderr.trim(),
    });
    const record = await store.get(host, job.target.pv);
    checks.push({
      what: `the placeholder of PV ${job.target.pv} is recorded`,
      ok: record !== null && record !== 'unreadable' && record.loop === attach.loop,
    });
    return verification(checks);
  }

  for (const step of plan.steps) {
    switch (step.kind) {
      case 'remove-link':
        checks.push({
          what: `${step.path} no longer points at ${step.target}`,
          ok: link !== step.target,
          detail: `link: ${link ?? 'none'}`,
        });
        break;
      case 'detach-loop': {
        const backing = loops.find((l) => l.loop === step.loop)?.backFile;
        checks.push({ what: `${step.loop} is no longer backed by our image`, ok: backing !== host.argPath(step.image) });
        break;
      }
      case 'delete-image':
        checks.push({ what: `${step.image} is gone`, ok: (await host.lstat(step.image)) === null });
        break;
      case 'delete-record':
        checks.push({ what: `no placeholder is recorded for PV ${step.pv}`, ok: (await store.get(host, step.pv)) === null });
        break;
      default:
        break;
    }
  }
  return verification(checks);
}
