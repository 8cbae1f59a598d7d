import type { LocalPvPlaceholderJob, RemediationJob, ResidualMultipathJob } from '../../src/core/catalogue/jobs.ts';
import { idempotencyKey } from '../../src/core/catalogue/idempotency-keys.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { Host } from '../host/host.ts';
import { sysfsDisks } from '../runbooks/local-pv-placeholder/observe.ts';
import { PlaceholderStore } from '../runbooks/local-pv-placeholder/record-store.ts';
import { readIntents } from '../runbooks/residual-multipath-cleanup/intents.ts';
import { orphanScan, type OrphanScanOptions } from '../runbooks/orphaned-pod-volumes/scan.ts';

// What the node agent notices by itself, and asks for through its own node's queue
// like any sender, so modes, gates, the audit trail and Events apply:
// - a Local PV placeholder whose disk came back (a block device with the recorded WWN in sysfs):
//   a detector's release job, which the runbook verifies again before it detaches anything. Its
//   key is the one triage gives a detector's release of that PV, so NPD's and ours fold;
// - at start, intent records of a residual cleanup that was interrupted: a residual job for this
//   node and boot, which finishes what the record names;
// - a directory in kubelet's pods/ that no pod the API server or the runtime knows owns, seen in
//   two scans ORPHAN_MIN_AGE_SECONDS apart: an orphaned-pod-volumes job for it (the key triage
//   gives kubelet's line about that UID).
// Looks only; never throws (a failed check is logged and tried again at the next interval).

export interface SelfChecksOptions {
  node: string;
  /** The real host (reads only). */
  host: Host;
  stateDir: string;
  /** Stores jobs on the node's queue (Dispatcher.enqueue). */
  enqueue: (jobs: RemediationJob[]) => Promise<unknown>;
  /** Placeholder checks after the one at start; 0: at start only. */
  intervalMs: number;
  log: Logger;
  /** Calls `tick` every `ms` until the returned function is called (tests pass their own clock). */
  every?: Every;
  /** The orphaned-pod-volumes scan (at start, then every `intervalMs`; 0: at start only); absent: none. */
  orphans?: Omit<OrphanScanOptions, 'node' | 'host' | 'stateDir'> & { intervalMs: number };
}

type Every = (ms: number, tick: () => void) => () => void;

/** setInterval, not keeping the process alive for it. */
const everyInterval: Every = (ms, tick) => {
  const timer = setInterval(tick, ms);
  timer.unref();
  return () => clearInterval(timer);
};

/** Release jobs for the placeholders whose disk (its WWN, on a device that is not a loop) is back. */
export async function returnedDiskReleases(host: Host, stateDir: string, node: string): Promise<LocalPvPlaceholderJob[]> {
  const { records } = await new PlaceholderStore(stateDir).list(host);
  if (records.length === 0) return [];
  const disks = await sysfsDisks(host);
  const jobs: LocalPvPlaceholderJob[] = [];
  for (const r of records) {
    const back = [...disks].filter(([, wwn]) => wwn === r.wwn).map(([name]) => `/dev/${name}`);
    if (back.length === 0) continue;
    jobs.push({
      version: 1,
      runbook: 'local-pv-placeholder',
      key: idempotencyKey('lpv-release', [r.pv, r.path]),
      target: { node, pv: r.pv, path: r.path },
      action: 'release',
      release: { by: 'detector', force: false },
      evidence: [
        {
          source: 'agent',
          summary: `the disk of PV ${r.pv} (WWN ${r.wwn}) is back on ${node} as ${back.join(', ')}`,
          raw: { pv: r.pv, path: r.path, wwn: r.wwn, devices: back },
        },
      ],
    });
  }
  return jobs;
}

/** A residual job for this node and boot when intent records of an interrupted cleanup are on the host. */
export async function interruptedCleanup(host: Host, stateDir: string, node: string): Promise<ResidualMultipathJob | null> {
  const { records, unreadable } = await readIntents(host, stateDir);
  if (records.length === 0 && unreadable.length === 0) return null;
  const bootId = (await host.readFile('/proc/sys/kernel/random/boot_id').catch(() => null))?.trim() ?? 'unknown-boot';
  const maps = records.map((r) => `${r.map} (WWID ${r.wwid}, job ${r.jobId})`);
  return {
    version: 1,
    runbook: 'residual-multipath-cleanup',
    key: idempotencyKey('residual-resume', [node, bootId]),
    target: { node },
    ...(/^[A-Za-z0-9-]{1,64}$/.test(bootId) ? { bootId } : {}),
    evidence: [
      {
        source: 'agent',
        summary: `intent record(s) of an interrupted cleanup on ${node}: ${[...maps, ...unreadable].join(', ')}`.slice(0, 500),
        raw: { records: records.map((r) => ({ map: r.map, wwid: r.wwid, jobId: r.jobId })), unreadable },
      },
    ],
  };
}

export interface SelfChecks {
  /** The checks at start. */
  first: Promise<void>;
  /** No more checks; resolves once a check that is running has finished (before the queue connection closes). */
  stop: () => Promise<void>;
}

export function startSelfChecks(opts: SelfChecksOptions): SelfChecks {
  const placeholders = async (): Promise<void> => {
    try {
      const jobs = await returnedDiskReleases(opts.host, opts.stateDir, opts.node);
      if (jobs.length === 0) return;
      await opts.enqueue(jobs);
      opts.log.info({ pvs: jobs.map((j) => j.target.pv) }, 'placeholder disk(s) back: release asked for');
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'could not check whether placeholder disks came back');
    }
  };
  const intents = async (): Promise<void> => {
    try {
      const job = await interruptedCleanup(opts.host, opts.stateDir, opts.node);
      if (!job) return;
      await opts.enqueue([job]);
      opts.log.warn({ key: job.key }, 'intent records of an interrupted cleanup found at start: a job to finish it was stored');
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'could not look for interrupted cleanups');
    }
  };
  const orphans = async (): Promise<void> => {
    if (!opts.orphans) return;
    try {
      const r = await orphanScan({ ...opts.orphans, node: opts.node, host: opts.host, stateDir: opts.stateDir });
      if ('skipped' in r) {
        opts.log.info({ why: r.skipped }, 'orphaned pod directories not scanned');
        return;
      }
      if (r.jobs.length > 0) {
        await opts.enqueue(r.jobs);
        opts.log.warn({ uids: r.jobs.map((j) => j.target.podUid) }, 'orphaned pod directories seen in two scans: cleanup asked for');
      }
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'could not scan for orphaned pod directories');
    }
  };
  // One check at a time: a tick while one runs (slow sysfs, Redis timing out) is skipped, not queued.
  let running: Promise<void> = Promise.all([intents(), placeholders(), orphans()]).then(() => undefined);
  let busy = true;
  const first = running.finally(() => {
    busy = false;
  });
  const tick = (): void => {
    if (busy) return;
    busy = true;
    running = placeholders().finally(() => {
      busy = false;
    });
  };
  const cancel = opts.intervalMs > 0 ? (opts.every ?? everyInterval)(opts.intervalMs, tick) : () => {};
  let scanning: Promise<void> = Promise.resolve();
  let scanBusy = false;
  const scanTick = (): void => {
    if (scanBusy) return;
    scanBusy = true;
    scanning = first.then(orphans).finally(() => {
      scanBusy = false;
    });
  };
  const cancelScan = opts.orphans && opts.orphans.intervalMs > 0 ? (opts.every ?? everyInterval)(opts.orphans.intervalMs, scanTick) : () => {};
  return {
    first,
    stop: async () => {
      cancel();
      cancelScan();
      await Promise.all([running, scanning]);
    },
  };
}
