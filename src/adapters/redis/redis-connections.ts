import { connect, type ConnectionRole, type ConnectOptions, type RedisConnection } from './redis.ts';
import { fullJitter, PRODUCER_BACKOFF, WORKER_BACKOFF, type Backoff } from './reconnect-backoff.ts';
import type { RedisTarget } from './redis-target.ts';

// The owner of a process's long-lived Redis connections (docs/redis.md, "Redis connections"): it opens them, brings
// back one that ended, reports their state to /readyz and /metrics, and closes them on shutdown.
//
// ioredis reconnects a dropped socket by itself (a CLIENT KILL, a Redis restart), but a client
// whose connector throws goes to status `end` and never tries again. On Sentinel that happens
// when a failover is announced while a reconnect is asking a sentinel where the primary is: the
// previous connection's failover detector, still subscribed to `+switch-master`, calls the
// connector's disconnect(), and the pending connect() throws "Connection is closed."
// (test/int/adapters/redis/redis-connection-revival.int.test.ts makes that happen on purpose). Every command on
// such a client then fails at once, for good.
//
// An ended client is brought back by connect() on the same object, after a jittered wait: a new
// connector run, a new socket, a new handshake; the ended socket is never written to again. The
// object is kept, not swapped, because everything that holds it keeps working: the scripts
// BullMQ defined on it, the listeners of BullMQ and of our own modules, the queues made on it.
// (BullMQ brings back its own blocking connections the same way: Worker.waitForJob.)
//
// Only close() ends a connection for good; an `end` before it, whoever caused it, is revived.

export interface ConnectionState {
  /** The connection's name in this process (`producer`, `replica-ack`, `worker`, ...). */
  name: string;
  /** ioredis' status: ready, connecting, reconnecting, end, ... */
  status: string;
  ready: boolean;
  /** Since when it has not been ready (ms since the epoch); absent while ready. */
  notReadySince?: number;
  /**
   * Since when it has kept ending: set by the first `end`, cleared once it is ready again or
   * ioredis is reconnecting it by itself (the connector worked). Absent otherwise.
   */
  endedSince?: number;
  /** Times it ended and was brought back by this supervisor. */
  replacements: number;
  /** Times ioredis reconnected it by itself (a dropped socket, a restart). */
  reconnects: number;
  lastError?: string;
}

export interface RedisConnectionsOptions {
  target: RedisTarget | string;
  /** Which process, for CLIENT LIST: each connection is named `volume-medic:<process>:<name>`. */
  process: string;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  /** Wait before bringing an ended connection back (default: the role's reconnect backoff). */
  backoff?: Backoff;
  /**
   * Redis refused this process's credentials (WRONGPASS: the user is gone or its password changed;
   * NOAUTH). An enrolled agent asks the receiver for its user again, which puts it back.
   */
  onAuthRefused?: (message: string) => void;
  /** Passed to every connect() (tests: a sentinel timeout long enough to hold a reconnect). */
  connect?: Omit<ConnectOptions, 'connectionName'>;
  now?: () => number;
  random?: () => number;
}

interface Entry {
  name: string;
  conn: RedisConnection;
  replacements: number;
  reconnects: number;
  attempts: number;
  /** Ended since it was last ready: the next `ready` is a replacement. */
  reviving: boolean;
  notReadySince: number | undefined;
  endedSince: number | undefined;
  lastError: string | undefined;
  timer: NodeJS.Timeout | undefined;
  detach: () => void;
}

/** How Redis refuses credentials (ioredis passes its reply through, sometimes behind a prefix). */
const AUTH_REFUSED = /\b(WRONGPASS|NOAUTH)\b/;

/** CLIENT SETNAME takes no spaces or newlines; node names never have them, but keep it so. */
const clientName = (process: string, name: string): string => `volume-medic:${process}:${name}`.replace(/[^\x21-\x7e]/g, '_');

export class RedisConnections {
  readonly #o: RedisConnectionsOptions;
  readonly #now: () => number;
  readonly #entries: Entry[] = [];
  #closing: Promise<void> | undefined;

  constructor(o: RedisConnectionsOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  /** A supervised connection; `name` is unique in this process. */
  open(name: string, role: ConnectionRole): RedisConnection {
    if (this.#closing) throw new Error(`Redis connections of ${this.#o.process} are closing: cannot open ${name}`);
    if (this.#entries.some((e) => e.name === name)) throw new Error(`a Redis connection named ${name} is already open`);
    const conn = connect(this.#o.target, role, { ...this.#o.connect, connectionName: clientName(this.#o.process, name) });
    const entry: Entry = {
      name,
      conn,
      replacements: 0,
      reconnects: 0,
      attempts: 0,
      reviving: false,
      notReadySince: this.#now(),
      endedSince: undefined,
      lastError: undefined,
      timer: undefined,
      detach: () => {},
    };
    const wait = fullJitter(this.#o.backoff ?? (role === 'producer' ? PRODUCER_BACKOFF : WORKER_BACKOFF), this.#o.random);
    const onError = (err: Error): void => {
      entry.lastError = err.message;
      if (AUTH_REFUSED.test(err.message)) this.#o.onAuthRefused?.(err.message);
    };
    const onReady = (): void => {
      if (entry.reviving) {
        entry.replacements++;
        this.#o.log.info({ connection: name, attempts: entry.attempts }, 'redis connection brought back after it had ended');
      }
      entry.reviving = false;
      entry.attempts = 0;
      entry.endedSince = undefined;
      entry.notReadySince = undefined;
    };
    const onClose = (): void => {
      entry.notReadySince ??= this.#now();
    };
    const onReconnecting = (): void => {
      entry.reconnects++;
      entry.endedSince = undefined;
    };
    const onConnect = (): void => {
      entry.endedSince = undefined;
    };
    const onEnd = (): void => {
      entry.notReadySince ??= this.#now();
      if (this.#closing || entry.timer) return;
      if (!entry.reviving) {
        entry.reviving = true;
        this.#o.log.warn({ connection: name, lastError: entry.lastError }, 'redis connection ended by itself; bringing it back');
      }
      entry.endedSince ??= this.#now();
      const delay = wait(++entry.attempts);
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        if (this.#closing || conn.status !== 'end') return;
        // A failure ends it again ('end' once more), which schedules the next attempt.
        conn.connect().catch((err: Error) => {
          entry.lastError = err.message;
        });
      }, delay);
    };
    const listeners: [string, (err: Error) => void][] = [
      ['error', onError],
      ['ready', onReady],
      ['close', onClose],
      ['reconnecting', onReconnecting],
      ['connect', onConnect],
      ['end', onEnd],
    ];
    for (const [event, f] of listeners) conn.on(event, f);
    entry.detach = () => {
      for (const [event, f] of listeners) conn.off(event, f);
    };
    this.#entries.push(entry);
    return conn;
  }

  /** The named connection (tests and fault tools kill it on purpose). */
  get(name: string): RedisConnection | undefined {
    return this.#entries.find((e) => e.name === name)?.conn;
  }

  states(): ConnectionState[] {
    return this.#entries.map((e) => ({
      name: e.name,
      status: e.conn.status,
      ready: e.conn.status === 'ready',
      ...(e.conn.status !== 'ready' && e.notReadySince !== undefined ? { notReadySince: e.notReadySince } : {}),
      ...(e.endedSince !== undefined ? { endedSince: e.endedSince } : {}),
      replacements: e.replacements,
      reconnects: e.reconnects,
      ...(e.lastError ? { lastError: e.lastError } : {}),
    }));
  }

  /** Quits every connection, newest first; nothing is brought back after this. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      for (const e of [...this.#entries].reverse()) {
        clearTimeout(e.timer);
        e.timer = undefined;
        e.detach();
        // quit() on a connection that is not up only waits for it: end it at once instead.
        if (e.conn.status === 'ready') await e.conn.quit().catch(() => e.conn.disconnect());
        else e.conn.disconnect();
      }
    })());
  }
}

/**
 * How long a connection may keep ending (every attempt to bring it back failed at once) before
 * the process counts as unable to recover and its liveness fails, so that Kubernetes restarts it.
 * A Redis that is merely away does not trip this: ioredis then reconnects by itself, which is
 * not ended.
 */
export const ENDED_RESTART_MS = 60_000;

/** Readiness and liveness from the connections' states (one rule, for every process). */
export function connectionHealth(
  states: readonly ConnectionState[],
  now: number,
  endedRestartMs = ENDED_RESTART_MS,
): { ready: boolean; live: boolean; report: Record<string, string> } {
  const report: Record<string, string> = {};
  let ready = true;
  let live = true;
  for (const s of states) {
    if (s.ready) {
      report[s.name] = 'ready';
      continue;
    }
    ready = false;
    const forS = s.notReadySince !== undefined ? ` for ${Math.round((now - s.notReadySince) / 1000)} s` : '';
    report[s.name] = `${s.status}${forS}${s.lastError ? `: ${s.lastError}` : ''}`;
    if (s.endedSince !== undefined && now - s.endedSince > endedRestartMs) live = false;
  }
  return { ready, live, report };
}
