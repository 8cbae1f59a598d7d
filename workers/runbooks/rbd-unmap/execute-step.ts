import { RefusedError, TransientError } from '../../../src/core/errors.ts';
import type { StepExecutor } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { CommandFailedError, expectOk } from '../../host/command-failed.ts';
import { devPath } from '../../host/paths.ts';
import { classify, describeHolder } from './classify.ts';
import { scanHolders } from './holders.ts';
import { parseMountinfo } from '../../host/mountinfo.ts';
import { headMappings, listMappings } from './observe.ts';
import type { UnmapPolicy } from './policy.ts';
import type { UnmapStep } from './step.ts';
import { isBusy, isNotMapped } from './unmap-error.ts';
import { removeFile } from './sysfs-mappings.ts';
import { isMissingCommand } from '../../host/missing-command.ts';

// Check-then-change. `umount` is done when the host namespace no longer has that mount of the
// device; `unmap` when showmapped no longer lists the device for the image. A busy unmap
// re-scans the holders and applies the plan's rules again before each retry: only stale
// kubelet mounts are released; anything live or foreign stops the job (refused, not retried).

export interface ExecuteDeps {
  policy: UnmapPolicy;
  sleep: (ms: number) => Promise<void>;
}

const TIMEOUT_MS = 60_000;

async function hostHasMount(host: Host, step: { device: string; majorMinor: string | null; mountPoint: string }): Promise<boolean> {
  const dev = devPath(step.device, 'rbd');
  const mounts = parseMountinfo((await host.readFile('/proc/1/mountinfo')) ?? '');
  return mounts.some((m) => m.mountPoint === step.mountPoint && (m.source === dev || m.majorMinor === step.majorMinor));
}

async function stillMapped(host: Host, step: Extract<UnmapStep, { kind: 'unmap' }>): Promise<boolean> {
  return headMappings(await listMappings(host), step.pool, step.image).some((m) => m.device === step.device);
}

const umountArgv = (host: Host, mountPoint: string): string[] => ['umount', host.argPath(mountPoint)];

type UnmapStepOf = Extract<UnmapStep, { kind: 'unmap' }>;
type Attempt = { result: 'done' } | { result: 'busy'; detail: string };

/** Without the rbd CLI on the node: what `rbd unmap` itself does, a write of the id to sysfs. */
async function unmapThroughSysfs(host: Host, step: UnmapStepOf, force: boolean): Promise<Attempt> {
  const id = step.device.replace(/^rbd/, '');
  const file = await removeFile(host);
  try {
    await host.writeSysfs(file, force ? `${id} force` : id);
    return { result: 'done' };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EBUSY') return { result: 'busy', detail: `write ${id} to ${file}: (16) Device or resource busy` };
    if ((code === 'ENOENT' || code === 'ENODEV' || code === 'EINVAL') && !(await stillMapped(host, step))) return { result: 'done' };
    throw err;
  }
}

async function unmapOnce(host: Host, step: UnmapStepOf, force: boolean): Promise<Attempt> {
  const dev = host.argPath(devPath(step.device, 'rbd'));
  const r = await host.run(force ? ['rbd', 'unmap', '-o', 'force', dev] : ['rbd', 'unmap', dev], { timeoutMs: TIMEOUT_MS });
  if (r.exitCode === 0 || wasSimulated(r)) return { result: 'done' };
  if (isMissingCommand(r)) return unmapThroughSysfs(host, step, force);
  if (isNotMapped(r.stderr) && !(await stillMapped(host, step))) return { result: 'done' };
  if (isBusy(r.stderr)) return { result: 'busy', detail: r.stderr.trim() };
  throw new CommandFailedError(r);
}

export function createStepExecutor(deps: ExecuteDeps): StepExecutor<UnmapStep> {
  async function unmap(step: UnmapStepOf, host: Host): Promise<void> {
    let last = '';
    for (let attempt = 1; attempt <= deps.policy.busyAttempts; attempt++) {
      const r = await unmapOnce(host, step, false);
      if (r.result === 'done') return;
      last = r.detail;
      // Busy: who holds it now? Release what the plan's rules call stale; stop at anything live.
      const c = classify(await scanHolders(host, step.device, step.majorMinor), step.context);
      const all = [...c.mounts, ...c.openers];
      const blocking = all.filter((h) => h.class === 'live' || h.class === 'foreign');
      if (blocking.length > 0) throw new RefusedError([`${devPath(step.device)} became busy with ${blocking.map(describeHolder).join('; ')}: not unmapping`]);
      for (const s of c.mounts.filter((m) => m.host && m.class === 'stale')) {
        expectOk(await host.run(umountArgv(host, s.mountPoint), { timeoutMs: TIMEOUT_MS }));
      }
      if (attempt < deps.policy.busyAttempts) await deps.sleep(deps.policy.busyDelayMs);
    }
    if (!step.forceAllowed)
      throw new TransientError(
        `rbd unmap ${devPath(step.device)} stayed busy after ${deps.policy.busyAttempts} attempts (${last}); a forced unmap is not allowed by policy`,
      );
    const c = classify(await scanHolders(host, step.device, step.majorMinor), step.context);
    const live = [...c.mounts, ...c.openers].filter((h) => h.class === 'live' || h.class === 'foreign');
    if (live.length > 0) throw new RefusedError([`not forcing the unmap of ${devPath(step.device)}: ${live.map(describeHolder).join('; ')}`]);
    const forced = await unmapOnce(host, step, true);
    if (forced.result === 'busy') throw new TransientError(`forced unmap of ${devPath(step.device)} answered busy: ${forced.detail}`);
  }

  return {
    async isDone(step, host) {
      switch (step.kind) {
        case 'umount':
          return !(await hostHasMount(host, step));
        case 'unmap':
          return !(await stillMapped(host, step));
        default: {
          const never: never = step;
          return never;
        }
      }
    },
    async apply(step, host) {
      switch (step.kind) {
        case 'umount':
          expectOk(await host.run(umountArgv(host, step.mountPoint), { timeoutMs: TIMEOUT_MS }));
          return;
        case 'unmap':
          return unmap(step, host);
        default: {
          const never: never = step;
          return never;
        }
      }
    },
  };
}
