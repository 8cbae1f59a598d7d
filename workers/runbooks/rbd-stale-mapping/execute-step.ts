import type { StepExecutor } from '../../engine/runbook.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { expectOk } from '../../host/command-failed.ts';
import type { BlocklistUndo } from './blocklist-undo.ts';
import { blocklist, blocklistAddArgv, listWatchers } from './ceph-commands.ts';
import type { NodeJobSink } from './node-job-sink.ts';
import type { StaleMappingStep } from './step.ts';

// Check-then-change. A fence is done when the address is blocklisted or its watch is gone by
// itself (then there is nothing to fence). Handing over the node half is idempotent by key, so
// it is never "already done" here: a retry enqueues again and the queue folds the repeat.

/** Where an applied fence of a node's address is recorded, so that only our own entries are ever lifted. */
export interface UndoRecording {
  undo: BlocklistUndo;
  jobKey: string;
  now: () => Date;
}

export function createStepExecutor(sink: NodeJobSink, mode: 'dry-run' | 'enforce', recording?: UndoRecording): StepExecutor<StaleMappingStep> {
  return {
    async isDone(step, host) {
      switch (step.kind) {
        case 'blocklist-add': {
          if ((await blocklist(host)).some((e) => e.addr === step.address)) return true;
          return !(await listWatchers(host, step.pool, step.headerObject)).watchers.some((w) => w.address === step.address);
        }
        case 'enqueue-unmap':
          return false;
        default: {
          const never: never = step;
          return never;
        }
      }
    },
    async apply(step, host) {
      switch (step.kind) {
        case 'blocklist-add': {
          const ran = expectOk(await host.run(blocklistAddArgv(step.address, step.expirySeconds)));
          // Only a fence that really ran (not a dry-run's or a parked job's simulation) is ours to lift.
          if (recording && step.node && !wasSimulated(ran)) {
            const at = recording.now().toISOString();
            await recording.undo.add({ address: step.address, node: step.node, job: recording.jobKey, addedAt: at, expirySeconds: step.expirySeconds });
          }
          return;
        }
        case 'enqueue-unmap':
          // Dry-run changes nothing, and a queued job is a change: it is reported as would-run.
          if (mode === 'enforce') await sink.enqueue(step.job);
          return;
        default: {
          const never: never = step;
          return never;
        }
      }
    },
  };
}
