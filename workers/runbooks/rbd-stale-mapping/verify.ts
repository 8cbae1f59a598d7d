import type { RbdStaleMappingJob } from '../../../src/core/catalogue/jobs.ts';
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
// (the OSD drops it within milliseconds: bench/README.md). A hand-over worked when the node half
// unmapped the image there, which the cluster sees as that node's watch leaving the header
// object: verify polls for it (1 s apart, a cheap `rados listwatchers`) up to handoffTimeoutMs.
// The node half's own result says why when it does not (refused: a live workload; failed).

/** Polls the header object until none of `addresses` watches it, or `timeoutMs` has passed. */
async function waitForWatchesToLeave(
  host: Host,
  pool: string,
  header: string,
  addresses: readonly string[],
  intervalMs: number,
  timeoutMs: number,
  deps: VerifyDeps,
): Promise<{ still: Set<string>; waitedMs: number }> {
  const started = deps.now();
  const still = async (): Promise<Set<string>> => {
    const now = new Set((await listWatchers(host, pool, header)).watchers.map((w) => w.address));
    return new Set(addresses.filter((a) => now.has(a)));
  };
  let left = await still();
  while (left.size > 0 && deps.now() - started < timeoutMs) {
    await deps.sleep(intervalMs);
    left = await still();
  }
  return { still: left, waitedMs: deps.now() - started };
}

export async function verify(
  job: RbdStaleMappingJob,
  host: Host,
  plan: Extract<Plan<StaleMappingStep>, { kind: 'steps' }>,
  deps: VerifyDeps,
): Promise<Verification> {
  const checks: Check[] = [];
  const { pool, image } = job.target;
  const fences = plan.steps.filter((s) => s.kind === 'blocklist-add');
  if (fences.length > 0) {
    const listed = new Set((await blocklist(host)).map((e) => e.addr));
    const { still } = await waitForWatchesToLeave(
      host,
      pool,
      fences[0]!.headerObject,
      fences.map((f) => f.address),
      100,
      deps.timeoutMs,
      deps,
    );
    for (const f of fences) {
      checks.push({ what: `${f.address} is blocklisted`, ok: listed.has(f.address) });
      checks.push({ what: `${f.address} no longer watches ${pool}/${image}`, ok: !still.has(f.address) });
    }
  }
  const handed = plan.steps.filter((s): s is Extract<StaleMappingStep, { kind: 'enqueue-unmap' }> => s.kind === 'enqueue-unmap');
  for (const s of handed) checks.push({ what: `unmap job ${s.job.key} handed to node ${s.job.target.node}`, ok: true });
  if (handed.length > 0 && deps.handoffTimeoutMs > 0) {
    const { still, waitedMs } = await waitForWatchesToLeave(
      host,
      pool,
      handed[0]!.headerObject,
      handed.map((s) => s.job.target.watcher),
      1_000,
      deps.handoffTimeoutMs,
      deps,
    );
    for (const s of handed) {
      const { watcher, node } = s.job.target;
      checks.push({
        what: still.has(watcher)
          ? `${watcher} (node ${node}) still watches ${pool}/${image} after ${Math.round(waitedMs / 1000)} s: see unmap job ${s.job.key} on that node`
          : `${watcher} (node ${node}) no longer watches ${pool}/${image}`,
        ok: !still.has(watcher),
      });
    }
  }
  return verification(checks);
}
