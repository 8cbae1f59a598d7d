import type { StepExecutor } from '../../engine/runbook.ts';
import { expectOk } from '../../host/command-failed.ts';
import { blocklist, blocklistAddArgv, listWatchers } from './ceph-commands.ts';
import type { NodeJobSink } from './node-job-sink.ts';
import type { StaleMappingStep } from './step.ts';

// Check-then-change. A fence is done when the address is blocklisted or its watch is gone by
// itself (then there is nothing to fence). Handing over the node half is idempotent by key, so
// it is never "already done" here: a retry enqueues again and the queue folds the repeat.

export function createStepExecutor(sink: NodeJobSink, mode: 'dry-run' | 'enforce'): StepExecutor<StaleMappingStep> {
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
        case 'blocklist-add':
          expectOk(await host.run(blocklistAddArgv(step.address, step.expirySeconds)));
          return;
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
