import type { RbdStaleMappingJob } from '../../../src/catalogue/jobs.ts';
import { verification, type Check, type Plan, type Verification } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { blocklist, listWatchers } from './ceph-commands.ts';
import type { StaleMappingStep } from './step.ts';

export interface VerifyDeps {
  /** How long a fenced watcher may take to vanish. */
  timeoutMs: number;
  /** How long the watch of a node the node half went to may take to vanish; 0: do not wait. */
  handoffTimeoutMs: number;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

// A fence worked when the address is blocklisted and its watch is gone from the header object
// (the OSD drops it within milliseconds, observed ~30 ms). A hand-over worked when the node half
// unmapped the image there, which the cluster sees as that node's watch leaving the header
// object: verify polls for it (1 s apart, a cheap `rados listwatchers`) up to handoffTimeoutMs.
// The node half's own result says why when it does not (refused: a live workload; failed).

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
  const handed = plan.steps.filter((s): s is Extract<StaleMappingStep, { kind: 'enqueue-unmap' }> => s.kind === 'enqueue-unmap');
  for (const s of handed) checks.push({ what: `unmap job ${s.job.key} handed to node ${s.job.target.node}`, ok: true });
  if (handed.length > 0 && deps.handoffTimeoutMs > 0) {
    const header = handed[0]!.headerObject;
    const started = deps.now();
    const waiting = async (): Promise<Set<string>> => {
      const now = new Set((await listWatchers(host, job.target.pool, header)).watchers.map((w) => w.address));
      return new Set(handed.map((s) => s.job.target.watcher).filter((a) => now.has(a)));
    };
    let left = await waiting();
    while (left.size > 0 && deps.now() - started < deps.handoffTimeoutMs) {
      await deps.sleep(1_000);
      left = await waiting();
    }
    const waited = Math.round((deps.now() - started) / 1000);
    for (const s of handed) {
      const gone = !left.has(s.job.target.watcher);
      checks.push({
        what: gone
          ? `${s.job.target.watcher} (node ${s.job.target.node}) no longer watches ${job.target.pool}/${job.target.image}`
          : `${s.job.target.watcher} (node ${s.job.target.node}) still watches ${job.target.pool}/${job.target.image} after ${waited} s: see unmap job ${s.job.key} on that node`,
        ok: gone,
      });
    }
  }
  return verification(checks);
}
