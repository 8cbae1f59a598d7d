import { posix } from 'node:path';
import type { Host } from '../host/host.ts';
import { readIntents } from '../runbooks/residual-multipath-cleanup/intents.ts';

// nodeAgent.removeHostState: on an uninstall, STATE_DIR leaves the host with the agent, but only
// when nothing in it still matters. Why the agent decides at its own SIGTERM, and how it tells an
// uninstall from a rolling update (both SIGTERM it): the chart's pre-delete check, once the
// uninstall may go on, marks every node queue (src/adapters/jobstore/uninstall-mark.ts); the agent
// reads its mark with each placeholder report (every 30 s) and remembers it, so at SIGTERM it needs
// no Redis (the bundled one may be stopping at the same moment). A DaemonSet pod cannot be waited
// on from a hook; its own shutdown can act on its own host.
// What keeps the directory (each named in the log line that says it stays):
//   - anything in placeholders/ (a record, or an image a placeholder may still be attached to);
//   - an intent record of a residual cleanup (intents/residual-multipath/), readable or not;
//   - an open journal (journal/<job>.json not finished, or unreadable): a job that may resume.
// The directory itself goes too where the agent runs host commands in the host's mount namespace
// (HOST_NSENTER); otherwise it is the agent's mount point and only its contents go.

/** Never removed, whatever STATE_DIR says. */
const NEVER = new Set(['/', '/var', '/var/lib', '/etc', '/usr', '/home', '/root', '/tmp', '/opt', '/run', '/srv', '/dev', '/proc', '/sys']);

/** What keeps STATE_DIR on the host: empty when nothing does. */
async function whatKeepsHostState(host: Host, stateDir: string): Promise<string[]> {
  const keeps: string[] = [];
  const placeholders = await host.list(posix.join(stateDir, 'placeholders'));
  if (placeholders.length) keeps.push(`placeholder files: ${placeholders.slice(0, 10).join(', ')} (run volume-medic prepare-uninstall)`);
  const intents = await readIntents(host, stateDir);
  if (intents.records.length + intents.unreadable.length)
    keeps.push(`intent records of a residual cleanup: ${[...intents.records.map((r) => r.map), ...intents.unreadable].slice(0, 10).join(', ')}`);
  const open: string[] = [];
  for (const name of await host.list(posix.join(stateDir, 'journal'))) {
    const text = await host.readFile(posix.join(stateDir, 'journal', name));
    if (!finished(text)) open.push(name);
  }
  if (open.length) keeps.push(`open step journals: ${open.slice(0, 10).join(', ')}`);
  return keeps;
}

/** A journal that says it finished; anything else (open, unreadable) may still resume. */
function finished(text: string | null): boolean {
  try {
    return text !== null && (JSON.parse(text) as { finished?: unknown }).finished === true;
  } catch {
    return false;
  }
}

/** Why STATE_DIR may never be removed, or null. */
export function unremovable(stateDir: string): string | null {
  if (!posix.isAbsolute(stateDir) || posix.normalize(stateDir) !== stateDir.replace(/\/$/, '') || NEVER.has(posix.normalize(stateDir)))
    return `STATE_DIR ${stateDir} is not a directory of its own to remove`;
  return null;
}

export interface HostStateRemovalOptions {
  host: Host;
  stateDir: string;
  /** REMOVE_HOST_STATE_ON_UNINSTALL. */
  enabled: boolean;
  /** The node's queue carried the uninstall mark at the last look. */
  marked: () => boolean;
  log: { info(fields: object, msg: string): void; warn(fields: object, msg: string): void };
}

/** At shutdown, after the worker closed: removes STATE_DIR when configured, marked and nothing keeps it. */
export async function removeHostStateIfUninstalling(o: HostStateRemovalOptions): Promise<'removed' | 'kept' | 'not-asked'> {
  if (!o.enabled || !o.marked()) return 'not-asked';
  const never = unremovable(o.stateDir);
  const keeps = never ? [never] : await whatKeepsHostState(o.host, o.stateDir).catch((err: Error) => [`it could not be read: ${err.message}`]);
  if (keeps.length) {
    o.log.warn({ stateDir: o.stateDir, keeps }, `uninstall: the host state directory ${o.stateDir} stays on this node: ${keeps.join('; ')}`);
    return 'kept';
  }
  const r = await o.host.run(['rm', '-rf', '--one-file-system', '--', o.host.argPath(o.stateDir)], { timeoutMs: 30_000 });
  const left = await o.host.list(o.stateDir).catch(() => [] as string[]);
  // Where it is our mount point, rm cannot remove the directory itself (EBUSY): its contents went.
  if (left.length === 0) {
    o.log.info({ stateDir: o.stateDir, exitCode: r.exitCode }, `uninstall: removed the host state directory ${o.stateDir}`);
    return 'removed';
  }
  o.log.warn({ stateDir: o.stateDir, left: left.slice(0, 10), stderr: r.stderr.slice(0, 500) }, `uninstall: could not remove all of ${o.stateDir}`);
  return 'kept';
}
