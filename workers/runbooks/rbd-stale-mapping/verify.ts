import type { RbdStaleMappingJob } from '../../../src/catalogue/jobs.ts';
import { verification, type Check, type Plan, type Verification } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { blocklist, listWatchers } from './ceph-commands.ts';
import type { StaleMappingStep } from './step.ts';

export interface VerifyDeps {
  /** How long a fenced watcher may take to vanish. */
  timeoutMs: number;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

// A fence worked when the address is blocklisted and its watch is gone from the header object
// (the OSD drops it within milliseconds, observed ~30 ms). The node half's own verification says
// whether the unmap worked there; here we only check it was handed over.

export async function verify(
  job: RbdStaleMappingJob,
  host: Host,
  plan: Extract<Plan<StaleMappingStep>, { kind: 'steps' }>,
  deps: VerifyDeps,
): Promise<Verification> {
  const checks: Check[] = [];
  const fences = plan.steps.filter((s) => s.kind === 'blocklist-add');
  if (fences.length > 0) {
    const listed = new Set((await blocklist(host)).map((e) => e.addr));
    const header = fences[0]!.headerObject;
    const deadline = deps.now() + deps.timeoutMs;
    let watching = new Set((await listWatchers(host, job.target.pool, header)).watchers.map((w) => w.address));
    while (fences.some((f) => watching.has(f.address)) && deps.now() < deadline) {
      await deps.sleep(100);
      watching = new Set((await listWatchers(host, job.target.pool, header)).watchers.map((w) => w.address));
    }
    for (const f of fences) {
      checks.push({ what: `${f.address} is blocklisted`, ok: listed.has(f.address) });
      checks.push({ what: `${f.address} no longer watches ${job.target.pool}/${job.target.image}`, ok: !watching.has(f.address) });
    }
  }
  for (const s of plan.steps) {
    if (s.kind === 'enqueue-unmap') checks.push({ what: `unmap job ${s.job.key} handed to node ${s.job.target.node}`, ok: true });
  }
  return verification(checks);
}
