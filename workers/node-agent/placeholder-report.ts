import type { PlaceholderReport, ReportedPlaceholder } from '../../src/core/catalogue/placeholder-report.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { Host } from '../host/host.ts';
import { loopHolders } from '../runbooks/local-pv-placeholder/loop-holders.ts';
import { listLoops, type LoopAttachment } from '../runbooks/local-pv-placeholder/loops.ts';
import { sysfsDisks } from '../runbooks/local-pv-placeholder/observe.ts';
import { PlaceholderStore } from '../runbooks/local-pv-placeholder/record-store.ts';

// The node's placeholders as the agent sees them now, for the receiver (GET /v1/placeholders,
// the fleet page, `volume-medic prepare-uninstall` and the chart's pre-delete check): what the
// records in STATE_DIR name, whether the loop device is still attached to our image, whether a
// disk with the recorded WWN is back, and what holds the device. Reads only. A part it cannot read
// is reported as not read (null), never as "no": a check that reads "not held" from a failed read
// would release what is in use.

const HOLDERS_SHOWN = 20;
/** How often an agent reports: often enough for `prepare-uninstall` to see a release within a minute. Cheap with no record on the node (one directory listing); with one, a /proc scan. */
export const REPORT_INTERVAL_MS = 30_000;

export async function placeholderReport(host: Host, stateDir: string, node: string, now: () => Date): Promise<PlaceholderReport> {
  const { records, unreadable } = await new PlaceholderStore(stateDir).list(host);
  const at = now().toISOString();
  if (records.length === 0) return { version: 1, node, at, placeholders: [], unreadable };
  const disks = new Set((await sysfsDisks(host)).values());
  const loops: LoopAttachment[] | null = await listLoops(host).catch(() => null);
  const ours = (pvLoop: string, image: string): boolean | null =>
    loops === null ? null : loops.some((a) => a.loop === pvLoop && a.backFile === host.argPath(image));
  const attachedLoops = records.filter((r) => ours(r.loop, r.image) === true).map((r) => r.loop);
  const holders = loops === null ? null : await loopHolders(host, attachedLoops, loops).catch(() => null);
  const placeholders = records.map((r): ReportedPlaceholder => {
    const attached = ours(r.loop, r.image);
    return {
      pv: r.pv,
      path: r.path,
      loop: r.loop,
      since: r.createdAt,
      attached,
      diskBack: disks.has(r.wwn),
      // A device not attached is held by nothing; one attached whose holders were not read is unknown.
      heldBy: attached === false ? [] : (holders?.[r.loop]?.slice(0, HOLDERS_SHOWN).map((h) => h.slice(0, 500)) ?? null),
    };
  });
  return { version: 1, node, at, placeholders, unreadable };
}

export interface PlaceholderReportsOptions {
  host: Host;
  stateDir: string;
  node: string;
  /** Stores the report (writePlaceholderReport on the agent's own queue). */
  publish: (report: PlaceholderReport) => Promise<void>;
  intervalMs: number;
  /** Reads the uninstall mark of the node's queue (uninstallMarked), with each report. */
  readMark?: () => Promise<boolean>;
  now?: () => Date;
  log: Pick<Logger, 'warn' | 'info'>;
}

/** How long stop() waits for a report on its way. */
const STOP_WAIT_MS = 1_000;

/**
 * Reports at start and every `intervalMs`, one report at a time (a tick while one runs is
 * skipped). Stopping leaves the last report in place: the placeholders outlive the agent.
 */
export function startPlaceholderReports(o: PlaceholderReportsOptions): { stop: () => Promise<void>; marked: () => boolean } {
  let failing = false;
  // The last mark read: a failed read keeps it (the uninstall may be stopping Redis right now).
  let marked = false;
  const once = async (): Promise<void> => {
    if (o.readMark) {
      const was = marked;
      marked = await o.readMark().catch(() => marked);
      if (marked && !was) o.log.info({}, "this node's queue is marked for an uninstall");
    }
    try {
      await o.publish(await placeholderReport(o.host, o.stateDir, o.node, o.now ?? (() => new Date())));
      if (failing) o.log.info({}, 'placeholder report stored again');
      failing = false;
    } catch (err) {
      // Once per outage; the last stored report stays until the next one.
      if (!failing) o.log.warn({ err: (err as Error).message }, 'could not report the placeholders of this node; the last report stays');
      failing = true;
    }
  };
  let running: Promise<void> | undefined = once().finally(() => {
    running = undefined;
  });
  const timer = setInterval(() => {
    running ??= once().finally(() => {
      running = undefined;
    });
  }, o.intervalMs);
  timer.unref();
  return {
    // A report on its way is waited for a moment, never longer: with Redis unreachable its write
    // waits for a reconnect that will not come before the agent exits (SIGTERM must still end it).
    stop: async () => {
      clearInterval(timer);
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([running, new Promise<void>((r) => (bound = setTimeout(r, STOP_WAIT_MS)))]);
      clearTimeout(bound);
    },
    marked: () => marked,
  };
}
