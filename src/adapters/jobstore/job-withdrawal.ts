import type { Queue } from 'bullmq';

// Withdrawing a job that has not started: what deleting its VolumeMedicRemediation (or
// NodeHealthCheck's timeout) asks for. Only a job that no agent holds is removed: waiting,
// delayed (parked, or backing off between attempts), prioritized or paused. A running attempt is
// the agent's (BullMQ's lock; its steps are each safe to stop after, but stopping one is the
// engine's business, not the store's); a finished job stays, as the record of what was done.

/** `removed`: gone from the store; `started`: an agent holds it now; `finished` or `absent`: nothing left to withdraw. */
export type Withdrawal = 'removed' | 'started' | 'finished' | 'absent';

export interface JobWithdrawal {
  withdraw(queue: string, id: string): Promise<Withdrawal>;
}

const NOT_STARTED = new Set(['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children']);

export class BullJobWithdrawal implements JobWithdrawal {
  readonly #queue: (name: string) => Queue;
  readonly #removed: ((queue: string, id: string) => Promise<void>) | undefined;

  /**
   * `queue`: the dispatcher's handle per queue name. `removed`: told each job removed, e.g. to
   * drop the parked record a parked job leaves (ControlsStore.unpark), which would otherwise list
   * a job that is gone as waiting for approval.
   */
  constructor(queue: (name: string) => Queue, removed?: (queue: string, id: string) => Promise<void>) {
    this.#queue = queue;
    this.#removed = removed;
  }

  async withdraw(queue: string, id: string): Promise<Withdrawal> {
    const q = this.#queue(queue);
    const state = await q.getJobState(id);
    if (state === 'unknown') return 'absent';
    if (state === 'completed' || state === 'failed') return 'finished';
    if (!NOT_STARTED.has(state)) return 'started';
    // BullMQ's removeJob script refuses a locked job (0): it became active after the state read.
    if ((await q.remove(id)) !== 1) return 'started';
    await this.#removed?.(queue, id);
    return 'removed';
  }
}
