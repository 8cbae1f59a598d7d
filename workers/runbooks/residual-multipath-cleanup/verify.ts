import type { ResidualMultipathJob } from '../../../src/core/catalogue/jobs.ts';
import { verification, type Check, type Verification } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { sysBlockPath } from '../../host/paths.ts';
import type { ResidualPlan } from './plan.ts';
import type { ResidualPolicy } from './policy.ts';
import { diskIdentity, dmOfWwid, isSameDisk } from './sysfs-maps.ts';
import { intentPath } from './intents.ts';
import { readObservations } from './observations.ts';

// Observes again: each flushed map, its disks and their /dev/disk/by-id links are gone; every
// map the plan left alone is still there on the same dm device with its paths. udev removes the
// links asynchronously after the kernel's remove events, so links get a short grace period.

export interface VerifyDeps {
  policy: ResidualPolicy;
  stateDir: string;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

export async function verify(_job: ResidualMultipathJob, host: Host, plan: Extract<ResidualPlan, { kind: 'steps' }>, deps: VerifyDeps): Promise<Verification> {
  const checks: Check[] = [];
  const links: string[] = [];
  for (const step of plan.steps) {
    switch (step.kind) {
      case 'flush-map': {
        const dm = await dmOfWwid(host, step.wwid);
        checks.push({ what: `map ${step.map} (WWID ${step.wwid}) is gone`, ok: dm === null, ...(dm ? { detail: `still ${dm}` } : {}) });
        links.push(...step.links);
        break;
      }
      case 'delete-disk': {
        const now = await diskIdentity(host, step.disk);
        const ours = now !== null && isSameDisk(now, step);
        checks.push({
          what: `disk ${step.disk} (${step.hctl ?? 'no H:C:T:L'}) is gone`,
          ok: !ours,
          ...(now ? { detail: `${step.disk} is ${now.hctl ?? '?'} ${now.wwid ?? '?'}` } : {}),
        });
        break;
      }
      case 'release-queued-io':
      case 'record-intent':
        break;
      case 'close-intent': {
        const left = await host.lstat(intentPath(deps.stateDir, step.wwid));
        checks.push({ what: `the intent record of WWID ${step.wwid} is removed`, ok: left === null });
        break;
      }
      default: {
        const never: never = step;
        return never;
      }
    }
  }

  if (links.length) {
    await host.run(['udevadm', 'settle', '--timeout=10'], { timeoutMs: 15_000 });
    const deadline = deps.now() + deps.policy.linkWaitMs;
    let left = links;
    for (;;) {
      const still: string[] = [];
      for (const l of left) if ((await host.lstat(l)) !== null) still.push(l);
      left = still;
      if (left.length === 0 || deps.now() >= deadline) break;
      await deps.sleep(250);
    }
    checks.push({
      what: `their /dev/disk/by-id links are gone (${links.length})`,
      ok: left.length === 0,
      ...(left.length ? { detail: `still there: ${left.join(', ')}` } : {}),
    });
  }

  for (const a of plan.assessments) {
    if (a.verdict.kind === 'residual') continue;
    const dm = await dmOfWwid(host, a.wwid);
    const slaves = dm ? await host.list(sysBlockPath(dm, 'slaves')) : [];
    const missing = a.paths.filter((p) => !slaves.includes(p));
    checks.push({
      what: `map ${a.map}, left alone, is untouched on ${a.dm ?? '?'} with paths ${a.paths.join(', ') || 'none'}`,
      ok: dm !== null && dm === a.dm && missing.length === 0,
      ...(dm === a.dm && missing.length === 0 ? {} : { detail: dm ? `now ${dm}, missing ${missing.join(', ') || 'none'}` : 'gone' }),
    });
  }
  // Probes we left stuck in D state: reported after the run, never waited for (not a failure).
  const { observations } = await readObservations(host, deps.stateDir);
  const hanging: string[] = [];
  for (const p of observations.stuckProbes) {
    const stat = await host.readFile(`/proc/${p.pid}/stat`).catch(() => null);
    if (stat !== null) hanging.push(`${p.pid} (probe of ${p.dm} since ${p.at})`);
  }
  if (hanging.length) checks.push({ what: 'read probes still hanging after the run (reported, not waited for)', ok: true, detail: hanging.join(', ') });
  return verification(checks);
}
