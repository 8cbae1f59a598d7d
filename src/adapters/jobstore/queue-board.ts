import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { RequestHandler } from 'express';

// bull-board over BullMQ's queues, always read-only: its own write API (add, retry, promote,
// clean, obliterate) takes arbitrary job data.

export interface QueueBoard {
  /** The board's pages and API, mounted at the base path it was made for. */
  router: RequestHandler;
  /** Shows these queues (their names), in this order. */
  show(names: readonly string[]): void;
}

/** A board for `basePath` over the queues `queue` hands out. */
export function createQueueBoard(queue: (name: string) => Queue): (basePath: string) => QueueBoard {
  return (basePath) => {
    const serverAdapter = new ExpressAdapter();
    serverAdapter.setBasePath(basePath);
    // @bull-board/express pins its own @bull-board/api (9.10.1 beside our 9.10.2): same shape,
    // separately declared types. Pinning @bull-board/api to the express adapter's version dedupes it.
    const board = createBullBoard({ queues: [], serverAdapter, options: { uiConfig: { boardTitle: 'volume-medic' } } });
    return {
      router: serverAdapter.getRouter() as RequestHandler,
      show: (names) => board.replaceQueues(names.map((n) => new BullMQAdapter(queue(n), { readOnlyMode: true, allowRetries: false }))),
    };
  };
}
