import type { Redis } from 'ioredis';

// A 202 that survives a failover. Replication is asynchronous: a job the primary stored and
// acknowledged can be gone after Sentinel promotes a replica that had not received it yet. So,
// before the receiver answers 202, a replica must have the job (REDIS_ACK_REPLICAS).
//
// WAIT counts the replicas that acknowledged the last write *of the connection it runs on*. It
// runs here on a connection of its own, after a write of its own (the marker): replication is one
// ordered stream, and the marker is written after the jobs' replies arrived, so a replica that
// has the marker has the jobs. Why not WAIT on the producer connection: a WAIT holds up every
// command queued behind it on that connection; with no replica left, every /readyz, control read
// and job store would queue behind timeouts. Here only the answers that wait for an ack wait.
//
// Which replicas: every replica the primary lists online, and never fewer than REDIS_ACK_REPLICAS.
// After a crash Sentinel promotes the replica its once-a-second INFO says holds the most, which
// need not be one that acknowledged: waiting for all of them closes that hole. It does not close
// the other: in a forced failover (or a partition) the old primary takes writes until it is
// reconfigured, while the promoted replica has already left it; the one still attached
// acknowledges, and both drop those writes when they resynchronise. Only a fixed count equal to
// the number of replicas refuses (503) there, at the price of a 503 whenever one is away
// (bench/README.md, "Soak"). The count of online replicas is read in the same round (INFO
// replication before WAIT); a replica that joined is waited for by a second WAIT, one that left
// costs one round its timeout.
//
// Not enough replicas within the timeout: the caller answers 503 and the sender retries (the job
// is stored on the primary meanwhile and may run; the retry folds into it and is answered 202
// once a replica acknowledges). What WAIT cannot do: stop a primary cut off by a partition from
// taking writes; Redis' own `min-replicas-to-write` on the primary is for that.

/** The marker of an installation: a string overwritten by each round. */
export const replicaAckKey = (prefix: string): string => `${prefix}:vm:replica-ack`;

export interface ReplicaAckOptions {
  /** The fewest replicas that must acknowledge; every online replica must too. */
  replicas: number;
  timeoutMs: number;
  /** The marker key (a string with a short TTL, overwritten by each round). */
  markerKey: string;
}

class NotReplicatedError extends Error {
  override name = 'NotReplicatedError';
}

/** The last round's outcome: what /readyz, /metrics and the alert say while 503s are by design. */
export interface ReplicaAckStatus {
  /** Replicas the last round required: REDIS_ACK_REPLICAS or every online one, whichever is more. */
  required: number;
  /** No round yet (nothing stored since start, and the watch has not run). */
  checked: boolean;
  /** The last round had enough replicas. */
  ok: boolean;
  /** Replicas that acknowledged the last round (0 when it could not be asked). */
  acknowledged: number;
  /** When the last round ended (ms since the epoch). */
  at?: number;
  /** Since when rounds have failed (ms since the epoch); absent while they succeed. */
  failingSince?: number;
  error?: string;
  rounds: { acknowledged: number; notEnough: number; error: number };
}

export class ReplicaAck {
  readonly #redis: Redis;
  readonly #opts: ReplicaAckOptions;
  /** A round not sent yet: callers arriving now are covered by it. */
  #next: Promise<void> | undefined;
  /** The round on its way (its marker may predate a newer caller's writes). */
  #running: Promise<void> | undefined;
  #status: ReplicaAckStatus;
  #watch: NodeJS.Timeout | undefined;
  /** Replicas the primary listed online in the last round: what the next round's WAIT asks for. */
  #online = 0;

  /** `redis`: a connection for this alone (never one that carries other commands). */
  constructor(redis: Redis, opts: ReplicaAckOptions) {
    this.#redis = redis;
    this.#opts = opts;
    this.#status = {
      required: opts.replicas,
      checked: false,
      ok: false,
      acknowledged: 0,
      rounds: { acknowledged: 0, notEnough: 0, error: 0 },
    };
  }

  status(): ReplicaAckStatus {
    return { ...this.#status, rounds: { ...this.#status.rounds } };
  }

  /**
   * Asks every `intervalMs` when no webhook did in that time, so that an idle receiver's
   * /readyz and metrics say whether a replica would acknowledge, before a webhook finds out.
   */
  watch(intervalMs: number): void {
    clearInterval(this.#watch);
    this.#watch = setInterval(() => {
      if (this.#running || this.#next) return;
      if (this.#status.at !== undefined && Date.now() - this.#status.at < intervalMs) return;
      this.confirm().catch(() => {});
    }, intervalMs);
    this.#watch.unref();
  }

  #record(acknowledged: number, outcome: 'acknowledged' | 'notEnough' | 'error', error?: string, required = this.#opts.replicas): void {
    const now = Date.now();
    const ok = outcome === 'acknowledged';
    const failingSince = ok ? undefined : (this.#status.failingSince ?? now);
    this.#status = {
      required,
      checked: true,
      ok,
      acknowledged,
      at: now,
      ...(failingSince !== undefined ? { failingSince } : {}),
      ...(error ? { error } : {}),
      rounds: { ...this.#status.rounds, [outcome]: this.#status.rounds[outcome] + 1 },
    };
  }

  /**
   * Resolves once `replicas` replicas acknowledged everything this process wrote before the call
   * (on any connection to this primary); rejects with NotReplicatedError when they did not
   * within the timeout, or when the primary cannot be reached. Concurrent callers share rounds:
   * at most one round waits and one more is queued, whatever the number of callers.
   */
  confirm(): Promise<void> {
    if (this.#next) return this.#next;
    const before = this.#running ?? Promise.resolve();
    const round: Promise<void> = before
      .catch(() => {})
      .then(() => {
        this.#next = undefined;
        this.#running = round;
        return this.#round();
      })
      .finally(() => {
        if (this.#running === round) this.#running = undefined;
      });
    this.#next = round;
    return round;
  }

  async #round(): Promise<void> {
    const { replicas, timeoutMs, markerKey } = this.#opts;
    let acked: number;
    let required = Math.max(replicas, this.#online);
    try {
      const res = await this.#redis.pipeline().set(markerKey, String(Date.now()), 'PX', 60_000).info('replication').wait(required, timeoutMs).exec();
      const [setErr] = res?.[0] ?? [new Error('no reply')];
      const [infoErr, info] = res?.[1] ?? [new Error('no reply')];
      const [waitErr, n] = res?.[2] ?? [new Error('no reply')];
      if (setErr || infoErr || waitErr) throw setErr ?? infoErr ?? waitErr;
      acked = Number(n);
      const asked = required;
      this.#online = onlineReplicas(String(info));
      required = Math.max(replicas, this.#online);
      // A replica came online since the last round: the marker is still this connection's last write.
      if (acked < required && required > asked) acked = Number(await this.#redis.wait(required, timeoutMs));
    } catch (err) {
      const e = new NotReplicatedError(`could not ask for a replica acknowledgement: ${(err as Error).message}`);
      this.#record(0, 'error', e.message, required);
      throw e;
    }
    if (acked < required) {
      const e = new NotReplicatedError(`${acked} of ${required} replica(s) acknowledged within ${timeoutMs} ms`);
      this.#record(acked, 'notEnough', e.message, required);
      throw e;
    }
    this.#record(acked, 'acknowledged', undefined, required);
  }

  /** Stops the watch; the connection belongs to whoever opened it (RedisConnections). */
  close(): void {
    clearInterval(this.#watch);
    this.#watch = undefined;
  }
}

/** Replicas INFO replication lists as online (`slave<n>:ip=...,state=online,...`). */
export function onlineReplicas(info: string): number {
  let n = 0;
  for (const line of info.split('\n')) if (/^slave\d+:/.test(line) && /(^|[:,])state=online(,|$)/.test(line.trim())) n++;
  return n;
}
