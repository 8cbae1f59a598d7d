import { isDeepStrictEqual } from 'node:util';
import { posix } from 'node:path';
import { RefusedError, TransientError } from '../../../src/core/errors.ts';
import type { StepExecutor } from '../../engine/runbook.ts';
import type { Host } from '../../host/host.ts';
import { expectOk } from '../../host/command-failed.ts';
import { devPath } from '../../host/paths.ts';
import { imageOutsideStateDir } from './image-path.ts';
import { listLoops } from './loops.ts';
import type { PlaceholderStore } from './record-store.ts';
import type { PlaceholderStep } from './step.ts';

// Check-then-change for each step kind. `isDone` only looks, so a retry (or a second job for the
// same PV) finds finished work and skips it; `apply` re-checks what could have changed since the
// plan when acting on it would touch something that is not ours.

const LOOP_MAJOR = 7;
const COMMAND_TIMEOUT_MS = 30_000;

async function backingOf(host: Host, loop: string): Promise<string | null | undefined> {
  return (await listLoops(host)).find((a) => a.loop === loop)?.backFile;
}

// long because: one short case per step kind (isDone and apply side by side, so each kind reads as one unit)
export function createStepExecutor(store: PlaceholderStore): StepExecutor<PlaceholderStep> {
  return {
    async isDone(step, host) {
      switch (step.kind) {
        case 'write-record':
          return isDeepStrictEqual(await store.get(host, step.record.pv), step.record);
        case 'create-image': {
          const info = await host.lstat(step.image);
          return info?.type === 'file' && info.size === step.bytes;
        }
        case 'ensure-loop-node': {
          const info = await host.lstat(devPath(step.loop, 'loop'));
          if (!info) return false;
          if (info.type === 'block' && info.major === LOOP_MAJOR && info.minor === step.minor) return true;
          throw new RefusedError([`${devPath(step.loop, 'loop')} exists but is not block device ${LOOP_MAJOR}:${step.minor}`]);
        }
        case 'attach-loop': {
          const backing = await backingOf(host, step.loop);
          if (backing === undefined) return false;
          if (backing === host.argPath(step.image)) return true;
          // Taken between plan and act (kubelet's `losetup -f`?): the retry plans another device.
          throw new TransientError(`${step.loop} was taken by ${backing ?? 'another user'} before we could attach it`);
        }
        case 'point-link':
          return (await host.readlink(step.path)) === step.target;
        case 'remove-link':
          return (await host.readlink(step.path)) !== step.target;
        case 'detach-loop':
          // Not attached, or attached to something that is not our image: nothing of ours to detach.
          return (await backingOf(host, step.loop)) !== host.argPath(step.image);
        case 'delete-image':
          return (await host.lstat(step.image)) === null;
        case 'delete-record':
          return (await store.get(host, step.pv)) === null;
        default: {
          const never: never = step;
          return never;
        }
      }
    },

    async apply(step, host) {
      // Checked again right before any losetup or rm of an image: a directory could have been
      // swapped for a symlink since the plan.
      if ('image' in step) {
        const outside = await imageOutsideStateDir(host, store, step.image);
        if (outside) throw new RefusedError([`not touching the image: ${outside}`]);
      }
      switch (step.kind) {
        case 'write-record':
          return store.put(host, step.record);
        case 'create-image': {
          await host.mkdir(posix.dirname(step.image));
          await host.writeFile(`${step.image}.tmp`, new Uint8Array(step.bytes));
          return host.rename(`${step.image}.tmp`, step.image);
        }
        case 'ensure-loop-node': {
          // /dev always exists on a node; under a test's host root it may not yet.
          await host.mkdir('/dev');
          const dev = host.argPath(devPath(step.loop, 'loop'));
          expectOk(await host.run(['mknod', '-m', '0660', dev, 'b', String(LOOP_MAJOR), String(step.minor)], { timeoutMs: COMMAND_TIMEOUT_MS }));
          return;
        }
        case 'attach-loop': {
          const dev = host.argPath(devPath(step.loop, 'loop'));
          expectOk(await host.run(['losetup', dev, host.argPath(step.image)], { timeoutMs: COMMAND_TIMEOUT_MS }));
          return;
        }
        case 'point-link': {
          const current = await host.lstat(step.path);
          const existing = current ? await host.readlink(step.path) : null;
          if (current && (current.type !== 'symlink' || existing !== step.replaces)) {
            throw new RefusedError([`${step.path} appeared (${existing ?? current.type}) while we were placing the placeholder: not replacing it`]);
          }
          const dir = posix.dirname(step.path);
          const tmp = posix.join(dir, `.${posix.basename(step.path)}.volume-medic-tmp`);
          await host.mkdir(dir);
          await host.unlink(tmp);
          await host.symlink(step.target, tmp);
          // rename(2) replaces atomically: kubelet sees the old state or the new one, never none.
          return host.rename(tmp, step.path);
        }
        case 'remove-link': {
          await host.unlink(step.path);
          return;
        }
        case 'detach-loop': {
          expectOk(await host.run(['losetup', '-d', host.argPath(devPath(step.loop, 'loop'))], { timeoutMs: COMMAND_TIMEOUT_MS }));
          return;
        }
        case 'delete-image': {
          await host.unlink(step.image);
          return;
        }
        case 'delete-record':
          return store.remove(host, step.pv);
        default: {
          const never: never = step;
          return never;
        }
      }
    },
  };
}
