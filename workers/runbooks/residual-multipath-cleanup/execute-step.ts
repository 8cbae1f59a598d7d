import { isMapName } from '../../../src/core/catalogue/names.ts';
import { RefusedError, TransientError } from '../../../src/core/errors.ts';
import type { StepExecutor } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { expectOk } from '../../host/command-failed.ts';
import { sysBlockPath } from '../../host/paths.ts';
import { parseDmsetupInfoColumns } from './dmsetup-info.ts';
import { isDeadPath, parseMultipathLl, pathsOf } from './multipath-ll.ts';
import type { ResidualPolicy } from './policy.ts';
import type { ResidualStep } from './step.ts';
import { diskIdentity, dmOfWwid, isSameDisk } from './sysfs-maps.ts';
import { IntentRecord, intentPath, markIntentStep, writeIntent } from './intents.ts';

// Check-then-change for each step. `isDone` only looks (a map already gone, a disk already
// deleted is success); `apply` re-checks what could have changed since the plan when acting on
// a changed world would hurt: a path that came back, a map that gained a holder, a disk name
// that now belongs to another LUN.

export interface ExecutorDeps {
  policy: ResidualPolicy;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
  /**
   * The job runs against a dry-run host: earlier steps were only recorded, so checks that
   * expect their effect (the disk is no longer held by the flushed map) cannot hold.
   */
  dryRun: boolean;
  /** Host path of the agent's state directory: intent records live under it. */
  stateDir: string;
}

/**
 * A map name as an argv element, checked again here whatever planned it (a step from an older
 * job, an intent record on disk): a name outside the pattern, e.g. `-f` or `--help`, would be an
 * option to multipath/dmsetup. Refused, not retried.
 */
function mapArg(map: string): string {
  if (!isMapName(map)) throw new RefusedError([`the map name ${JSON.stringify(map.slice(0, 140))} is not a plain map name: it never goes into a command`]);
  return map;
}

const inUse = (text: string): boolean => /in use|busy/i.test(text);

async function openCount(host: Host, map: string, timeoutMs: number): Promise<number | null> {
  const r = await host.run(['dmsetup', 'info', '-c', mapArg(map)], { timeoutMs });
  if (r.exitCode !== 0) return null;
  try {
    return parseDmsetupInfoColumns(r.stdout).find((i) => i.name === map)?.open ?? null;
  } catch {
    return null;
  }
}

/** The map by that name is still the one the plan saw (same WWID). */
async function assertSameMap(host: Host, step: { map: string; wwid: string; dm: string }): Promise<void> {
  const name = (await host.readFile(sysBlockPath(step.dm, 'dm', 'name')))?.trim();
  const dm = await dmOfWwid(host, step.wwid);
  if (dm !== step.dm || name !== step.map) {
    throw new TransientError(
      `map ${step.map} is no longer ${step.dm} with WWID ${step.wwid} (now ${dm ?? 'gone'}${name ? `, ${step.dm} is ${name}` : ''}): planning again`,
    );
  }
}

/** Refuses when a path of the map is alive again or something now holds it. */
async function assertStillDead(host: Host, step: { map: string; dm: string }, timeoutMs: number): Promise<void> {
  const holders = await host.list(sysBlockPath(step.dm, 'holders'));
  if (holders.length) throw new RefusedError([`${step.map} gained holder(s) ${holders.join(', ')} since the plan: not removing it`]);
  const ll = expectOk(await host.run(['multipath', '-ll', mapArg(step.map)], { timeoutMs }));
  const map = parseMultipathLl(ll.stdout).maps.find((m) => m.name === step.map);
  const live = map ? pathsOf(map).filter((p) => !isDeadPath(p)) : [];
  if (live.length)
    throw new RefusedError([
      `path(s) ${live.map((p) => `${p.dev ?? '-'} ${p.dmState} ${p.checkerState}`).join(', ')} of ${step.map} came back since the plan: not removing it`,
    ]);
}

// long because: one short case per step kind (isDone and apply side by side, so each kind reads as one unit)
export function createStepExecutor(deps: ExecutorDeps): StepExecutor<ResidualStep> {
  const { policy } = deps;
  const t = { timeoutMs: policy.commandTimeoutMs };

  return {
    async isDone(step, host) {
      if ('map' in step) mapArg(step.map);
      switch (step.kind) {
        case 'record-intent': {
          // A record for the same map on the same dm device stays: its done steps are history.
          const text = await host.readFile(intentPath(deps.stateDir, step.record.wwid)).catch(() => null);
          const r = text === null ? null : IntentRecord.safeParse(safeJson(text));
          return r?.success === true && r.data.dm === step.record.dm && r.data.map === step.record.map;
        }
        case 'close-intent':
          return (await host.lstat(intentPath(deps.stateDir, step.wwid))) === null;
        case 'release-queued-io': {
          if ((await dmOfWwid(host, step.wwid)) === null) return true;
          const table = await host.run(['dmsetup', 'table', mapArg(step.map)], t);
          return table.exitCode === 0 && table.stdout.trim() !== '' && !table.stdout.includes('queue_if_no_path');
        }
        case 'flush-map':
          return (await dmOfWwid(host, step.wwid)) === null;
        case 'delete-disk': {
          const now = await diskIdentity(host, step.disk);
          // Gone, or the name now belongs to another disk: nothing of ours is left to delete.
          return now === null || !isSameDisk(now, step);
        }
        default: {
          const never: never = step;
          return never;
        }
      }
    },

    async apply(step, host) {
      if ('map' in step) mapArg(step.map);
      await applyStep(step, host);
      if (step.destructive && 'wwid' in step) await markIntentStep(host, deps.stateDir, step.wwid, step.id, new Date(deps.now()).toISOString());
    },
  };

  async function applyStep(step: ResidualStep, host: Host): Promise<void> {
    switch (step.kind) {
      case 'record-intent':
        await writeIntent(host, deps.stateDir, step.record);
        return;
      case 'close-intent':
        await host.unlink(intentPath(deps.stateDir, step.wwid));
        return;
      case 'release-queued-io': {
        await assertSameMap(host, step);
        await assertStillDead(host, step, policy.commandTimeoutMs);
        expectOk(await host.run(['dmsetup', 'message', mapArg(step.map), '0', 'fail_if_no_path'], t));
        return;
      }
      case 'flush-map': {
        await assertSameMap(host, step);
        await assertStillDead(host, step, policy.commandTimeoutMs);
        // Openers that were stuck on queued I/O need a moment to get their EIO and close.
        const deadline = deps.now() + policy.openCountWaitMs;
        for (;;) {
          const r = await host.run(['multipath', '-f', mapArg(step.map)], t);
          // Simulated (dry-run), flushed, or gone by other hands: done either way.
          if (r.exitCode === 0 || wasSimulated(r) || (await dmOfWwid(host, step.wwid)) === null) return;
          if (!inUse(`${r.stdout}\n${r.stderr}`) || deps.now() >= deadline) {
            const open = await openCount(host, step.map, policy.commandTimeoutMs);
            if (inUse(`${r.stdout}\n${r.stderr}`)) {
              throw new TransientError(`multipath -f ${step.map}: still in use after ${policy.openCountWaitMs} ms (open count ${open ?? 'unknown'})`);
            }
            expectOk(r);
          }
          do await deps.sleep(250);
          while (deps.now() < deadline && ((await openCount(host, step.map, policy.commandTimeoutMs)) ?? 1) > 0);
        }
      }
      case 'delete-disk': {
        const now = await diskIdentity(host, step.disk);
        if (now === null || !isSameDisk(now, step)) return;
        const holders = await host.list(sysBlockPath(step.disk, 'holders'));
        if (holders.length && !deps.dryRun) {
          throw new TransientError(`${step.disk} is held by ${holders.join(', ')} again (multipathd re-created the map?): planning again`);
        }
        await withDeadline(
          host.writeSysfs(sysBlockPath(step.disk, 'device', 'delete'), '1'),
          policy.commandTimeoutMs,
          `echo 1 > /sys/block/${step.disk}/device/delete`,
        );
        return;
      }
      default: {
        const never: never = step;
        return never;
      }
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A sysfs write runs in a libuv thread; if the kernel never returns we stop waiting, not the thread. */
async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TransientError(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
