import type { ConsumeOptions, JobConsumer, JobConsumers, JobHandler } from '../../core/jobs/job-store.ts';
import type { Logger } from '../observability/logger.ts';
import { RedisConnections } from '../redis/redis-connections.ts';
import type { RedisTarget } from '../redis/redis-target.ts';
import type { ConnectionRole, RedisConnection } from '../redis/redis.ts';
import { consumeJobs } from './consumer.ts';
import { Dispatcher, type DispatcherOptions } from './dispatcher.ts';

// The job store as an agent process holds it (node agent, cluster worker): given where Redis is,
// it opens its connections, hands its consumers and enqueuers the ones they run on, and closes
// them. One command connection serves the consumer, the enqueuer and the worker's own records
// (statistics, controls, presence); BullMQ opens each consumer's blocking connection from it. So a
// node agent holds two connections, whatever it runs.

export interface AgentStoreOptions {
  /** Where Redis is (a URL: a single server). */
  redis: RedisTarget | string;
  /** Names its connections in CLIENT LIST: `volume-medic:<process>:<name>`. */
  process: string;
  prefix: string;
  log: Logger;
  /** Redis refused this process's credentials (its Redis user gone): an enrolled agent enrols again. */
  onAuthRefused?: () => void;
  /** Everything this process touches is in this key's slot (an enrolled node agent): ConnectOptions.oneSlot. */
  oneSlot?: string;
}

/** The name of the command connection, opened with the store. */
const COMMANDS = 'worker';

export class AgentStore implements JobConsumers {
  readonly prefix: string;
  /** Every connection it holds: their states for /readyz and /metrics, a named one for tests that kill it. */
  readonly connections: RedisConnections;
  /** The command connection (`worker`): the consumers', the enqueuers' by default, and the worker's own records. */
  readonly connection: RedisConnection;
  /** Its connections serve one slot of a Redis Cluster: what else reads there reads the slot's copies only. */
  readonly oneClusterSlot: boolean;
  readonly #log: Logger;
  readonly #consumers: JobConsumer[] = [];
  readonly #enqueuers: Dispatcher[] = [];
  #closing: Promise<void> | undefined;

  constructor(o: AgentStoreOptions) {
    this.prefix = o.prefix;
    this.#log = o.log;
    this.oneClusterSlot = o.oneSlot !== undefined && typeof o.redis !== 'string' && o.redis.kind === 'cluster';
    this.connections = new RedisConnections({
      target: o.redis,
      process: o.process,
      log: o.log.child({ component: 'redis' }),
      ...(o.onAuthRefused ? { onAuthRefused: o.onAuthRefused } : {}),
      ...(o.oneSlot !== undefined ? { connect: { oneSlot: { key: o.oneSlot } } } : {}),
    });
    this.connection = this.connections.open(COMMANDS, 'worker');
  }

  /** A consumer of `o.queue` on the command connection. */
  consume(o: ConsumeOptions, handler: JobHandler): JobConsumer {
    const consumer = consumeJobs({ connection: this.connection, prefix: this.prefix, log: this.#log }, o, handler);
    this.#consumers.push(consumer);
    return consumer;
  }

  /**
   * Seals and stores jobs on their queues (the dispatcher), on the command connection or on the
   * held connection `on` (opened as a producer the first time).
   */
  enqueuer(o: Omit<DispatcherOptions, 'prefix'>, on = COMMANDS): Dispatcher {
    const dispatcher = new Dispatcher(this.held(on, 'producer'), { ...o, prefix: this.prefix });
    this.#enqueuers.push(dispatcher);
    return dispatcher;
  }

  /** The held connection `name`, opened with `role` the first time (the process's own Redis reads: the no-agent check, key generations). */
  held(name: string, role: ConnectionRole): RedisConnection {
    return this.connections.get(name) ?? this.connections.open(name, role);
  }

  /** Stops its consumers (each waits for its running job), then its enqueuers, then quits its connections. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      await Promise.all(this.#consumers.map((c) => c.close()));
      await Promise.all(this.#enqueuers.map((d) => d.close()));
      await this.connections.close();
    })());
  }
}
