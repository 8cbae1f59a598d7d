import { connect as netConnect } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { connect as tlsConnect } from './node-tls.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbstractConnector, Redis } from 'ioredis';

// A connection to the one master of a Redis Cluster that holds one slot: what a node agent needs,
// whose every key carries its queue's hash tag. ioredis' Cluster client keeps a connection to every
// master a command ever went to (a command retried after a closed connection goes to a random one)
// and two 16,384-entry tables per client; this is one socket, to the slot's master only.
//
// Each (re)connect asks the seeds (and the last master found) for CLUSTER SLOTS on a short-lived
// connection, then connects to the master serving the slot. Every attempt that finds none waits
// its backoff and asks again, until the connection is closed. A reply that says the slot moved
// (MOVED <this slot>, a failover's READONLY) ends the connection, which finds the master again
// and sends the command there (reconnectOnError); a key of another slot gets its MOVED error.

export interface Endpoint {
  host: string;
  port: number;
}

export interface SlotTarget {
  seeds: readonly Endpoint[];
  slot: number;
  username?: string;
  password?: string;
  tls?: ConnectionOptions;
  /** How long one seed may take to answer CLUSTER SLOTS. */
  askTimeoutMs: number;
  /** The wait before asking every seed again, by attempt. */
  retry: (attempt: number) => number;
  /** For CLIENT LIST on the seeds asked. */
  connectionName?: string;
}

/** ioredis' message for a connection closed while it connects. */
const CLOSED = 'Connection is closed.';

/** The master of `slot` in a CLUSTER SLOTS reply (rows: start, end, [host, port, id, ...], replicas...). */
export function masterOfSlot(reply: unknown, slot: number, asked: Endpoint): Endpoint | undefined {
  if (!Array.isArray(reply)) return undefined;
  for (const row of reply) {
    if (!Array.isArray(row) || row.length < 3) continue;
    const [start, end, master] = row as [unknown, unknown, unknown];
    if (typeof start !== 'number' || typeof end !== 'number' || slot < start || slot > end || !Array.isArray(master)) continue;
    const [host, port] = master as [unknown, unknown];
    if (typeof port !== 'number' || !Number.isInteger(port) || port <= 0 || port > 65_535) return undefined;
    // An empty or '?' endpoint: the node asked (Redis' "preferred endpoint" unknown).
    const h = typeof host === 'string' && host !== '' && host !== '?' ? host : asked.host;
    return { host: h, port };
  }
  return undefined;
}

async function askSlots(t: SlotTarget, seed: Endpoint): Promise<Endpoint | undefined> {
  const r = new Redis({
    host: seed.host,
    port: seed.port,
    ...(t.username ? { username: t.username } : {}),
    ...(t.password ? { password: t.password } : {}),
    ...(t.tls ? { tls: { ...t.tls } } : {}),
    ...(t.connectionName ? { connectionName: `${t.connectionName}(slots)` } : {}),
    lazyConnect: true,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: t.askTimeoutMs,
    commandTimeout: t.askTimeoutMs,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return masterOfSlot(await r.cluster('SLOTS'), t.slot, seed);
  } finally {
    r.disconnect();
  }
}

export function slotConnector(t: SlotTarget): new (options: unknown) => AbstractConnector {
  let lastMaster: Endpoint | undefined;
  return class SlotConnector extends AbstractConnector {
    constructor(_options: unknown) {
      super(2_000);
    }

    /** After connecting, the ready check's INFO: a node that is no master (demoted by a failover) is left for another. */
    override check(info: Record<string, unknown>): boolean {
      return info['role'] === undefined || info['role'] === 'master';
    }

    async #find(): Promise<Endpoint> {
      const order = [...(lastMaster ? [lastMaster] : []), ...[...t.seeds].sort(() => Math.random() - 0.5)];
      const errors: string[] = [];
      for (const seed of order) {
        if (!this.connecting) throw new Error(CLOSED);
        try {
          const master = await askSlots(t, seed);
          if (master) return (lastMaster = master);
          errors.push(`${seed.host}:${seed.port}: no master serves slot ${t.slot}`);
        } catch (err) {
          errors.push(`${seed.host}:${seed.port}: ${(err as Error).message}`);
        }
      }
      throw new Error(`no node named the master of slot ${t.slot} (${errors.join('; ').slice(0, 500)})`);
    }

    override async connect(emit: (type: string, err: Error) => void): Promise<NonNullable<AbstractConnector['stream']>> {
      this.connecting = true;
      for (let attempt = 1; ; attempt++) {
        try {
          const m = await this.#find();
          if (!this.connecting) throw new Error(CLOSED);
          const stream = t.tls ? tlsConnect({ ...t.tls, host: m.host, port: m.port }) : netConnect({ host: m.host, port: m.port });
          stream.once('error', (err) => {
            this.firstError = err;
          });
          this.stream = stream;
          return stream;
        } catch (err) {
          if (!this.connecting) throw err;
          const wait = t.retry(attempt);
          emit('error', new Error(`${(err as Error).message}; asking again in ${wait} ms`));
          await sleep(wait);
        }
      }
    }
  };
}

/** Whether a command's error means this slot's master is elsewhere now (ioredis' reconnectOnError: 2 = reconnect, send again). */
export const slotMovedAway =
  (slot: number) =>
  (err: Error): false | 2 => {
    const moved = /^MOVED (\d+) /.exec(err.message);
    if (moved) return Number(moved[1]) === slot ? 2 : false;
    return /^READONLY /.test(err.message) ? 2 : false;
  };
