import type { Logger } from '../../adapters/observability/logger.ts';
import { memorySamples, nodeUsage, trimNode, type TrimReport } from '../../adapters/redis/node-memory.ts';
import type { ApplyReport } from '../../adapters/redis/node-user-servers.ts';
import { NodeRestrictions } from '../../adapters/redis/node-restrictions.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { DEFAULT_PASS_POLICY, fullness, type LastPass, nodesOverBudget, type PassPolicy, type PassReason, passDue } from '../../core/redis-budget/decision.ts';
import type { NodeRestriction } from '../../core/redis-budget/restriction.ts';

// The per-node Redis memory budget (issue 44): one node's own Redis user filling the shared Redis
// must not stop the fleet. Every second the receiver that exports the fleet-wide series (one
// replica: the Lease's leader) reads INFO memory of each primary; when memory is under pressure,
// and every NODE_REDIS_BUDGET_SCAN_SECONDS anyway, it counts every node's keys
// (src/adapters/redis/node-memory.ts). A node over NODE_REDIS_BUDGET_MIB:
//   1. is recorded as restricted in Redis (written even into a full Redis: allow-oom),
//   2. gets its Redis user back read-only on every server, its connections closed
//      (NodeRedisUsers.reapply): its writes are refused from then on, and it stays so through
//      re-enrolment, reconciles, failovers and a re-created Node, until an operator releases it;
//   3. gives memory back: its own keys go, the bulk of what it wrote first, until it holds its
//      budget again (never another node's key, never the receiver's): a node far under its
//      budget loses nothing;
//   4. is logged, written to the fleet audit trail, and shown by volume_medic_node_redis_over_budget
//      (alert VolumeMedicNodeRedisOverBudget).

/** The part of NodeRedisUsers this needs. */
interface NodeUserApplier {
  reapply(node: string): Promise<ApplyReport | undefined>;
}

export interface NodeRedisBudgetOptions {
  redis: RedisConnection;
  prefix: string;
  budgetBytes: number;
  users: NodeUserApplier;
  /** Is this the replica that counts (src/control/fleet/fleet-exporter.ts)? */
  active: () => boolean;
  log: Logger;
  /** The fleet audit trail (ControlsStore.audit); never throws into the count. */
  audit?: (action: string, target: string, asked: { by: string; why: string }) => Promise<void>;
  policy?: Partial<PassPolicy>;
  /** How often INFO memory is read (default 1000 ms). */
  checkMs?: number;
  now?: () => number;
}

/** Who the audit trail names for what the receiver did by itself. */
const BY = 'volume-medic-receiver (Redis memory budget)';
const mib = (b: number): string => `${(b / 1_048_576).toFixed(1)} MiB`;

export class NodeRedisBudget {
  readonly #o: NodeRedisBudgetOptions;
  readonly #policy: PassPolicy;
  readonly #restrictions: NodeRestrictions;
  readonly #now: () => number;
  /**
   * Restricted nodes whose read-only user a server did not take (a timeout, a server away): made
   * read-only again at every pass until every server has it. The restriction is recorded, so a
   * later pass would otherwise never apply it again, and the node kept its write rules there
   * until a full reconcile or its next enrolment.
   */
  readonly #notReadOnly = new Set<string>();
  #last: LastPass | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #closed = false;
  /** The last failure logged: a Redis that stays away is said once, not every second. */
  #failing: string | undefined;
  #warnedLimit = false;

  constructor(o: NodeRedisBudgetOptions) {
    this.#o = o;
    this.#policy = { ...DEFAULT_PASS_POLICY, ...o.policy };
    this.#restrictions = new NodeRestrictions(o.redis, o.prefix);
    this.#now = o.now ?? Date.now;
  }

  start(): void {
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        this.#running = this.check().finally(() => {
          if (!this.#closed) tick();
        });
      }, this.#o.checkMs ?? 1_000);
    };
    if (!this.#closed && !this.#timer) tick();
  }

  /** One check: INFO memory, and a count when one is due. Never throws. */
  async check(): Promise<void> {
    if (!this.#o.active()) return;
    try {
      const samples = await memorySamples(this.#o.redis);
      this.#warnLimit(samples.map((s) => s.max));
      const reason = passDue(samples, this.#last, this.#now(), this.#policy);
      if (reason) await this.pass(reason);
      this.#failing = undefined;
    } catch (err) {
      const msg = (err as Error).message;
      if (this.#failing !== msg) this.#o.log.warn({ err: msg }, 'node Redis budget: could not check Redis memory');
      this.#failing = msg;
    }
  }

  /** Counts every node's keys and acts on those over budget. */
  async pass(reason: PassReason): Promise<void> {
    const started = this.#now();
    const { usage, keys } = await nodeUsage(this.#o.redis, this.#o.prefix);
    const over = nodesOverBudget(usage, this.#o.budgetBytes);
    const restricted = over.length > 0 ? await this.#restrictions.all() : new Map<string, NodeRestriction>();
    for (const node of [...this.#notReadOnly])
      if (!over.some((o) => o.node === node))
        await this.#readOnly(node).catch((err: Error) =>
          this.#o.log.warn({ node, err: err.message }, 'node Redis budget: could not make a restricted node read-only (the next count tries again)'),
        );
    for (const { node, bytes } of over) {
      try {
        await this.#enforce(node, bytes, restricted.get(node));
      } catch (err) {
        this.#o.log.warn(
          { node, usedBytes: bytes, err: (err as Error).message },
          'node Redis budget: could not restrict a node over its budget (the next count tries again)',
        );
      }
    }
    this.#last = { at: this.#now(), fullness: fullness(await memorySamples(this.#o.redis)) };
    const level = reason === 'pressure' || over.length > 0 ? 'warn' : 'info';
    this.#o.log[level](
      { reason, nodes: usage.size, keys, ms: this.#now() - started, over: over.map((o) => o.node), fullness: Number(this.#last.fullness.toFixed(3)) },
      "node Redis budget: counted every node's keys",
    );
  }

  async #enforce(node: string, bytes: number, already: NodeRestriction | undefined): Promise<void> {
    const budget = this.#o.budgetBytes;
    let record: NodeRestriction = already ?? { at: new Date(this.#now()).toISOString(), usedBytes: bytes, budgetBytes: budget };
    if (!already || this.#notReadOnly.has(node)) {
      // Recorded first: a replica that applies this user again from now on applies it read-only.
      if (!already) await this.#restrictions.record(node, record);
      const applied = await this.#readOnly(node);
      this.#o.log.warn(
        { node, usedBytes: bytes, budgetBytes: budget, applied: applied?.applied, failed: applied?.failed },
        applied
          ? "node Redis budget: a node's keys went over its budget; its Redis user may only read now, its connections were closed"
          : "node Redis budget: a node's keys went over its budget, but it has no Redis user of its own to restrict",
      );
    }
    const trim: TrimReport = await trimNode(this.#o.redis, this.#o.prefix, node, budget);
    if (trim.keys > 0) {
      const removed = { keys: (record.removed?.keys ?? 0) + trim.keys, bytes: (record.removed?.bytes ?? 0) + trim.bytes };
      record = { ...record, removed };
      await this.#restrictions.record(node, record);
      this.#o.log.warn(
        { node, before: trim.before, removedKeys: trim.keys, removedBytes: trim.bytes, largest: trim.largest },
        "node Redis budget: removed a restricted node's keys (its heaviest size classes first) until it holds its budget",
      );
    }
    if (!already || trim.keys > 0)
      await this.#audit('node-redis-over-budget', node, {
        by: BY,
        why: `its keys held ${mib(bytes)}, over its budget of ${mib(budget)}: its Redis user may only read until an operator releases it${
          trim.keys > 0 ? `; removed ${trim.keys} of its keys (${mib(trim.bytes)}), the largest: ${trim.largest.map((k) => k.key).join(', ')}` : ''
        }`.slice(0, 2000),
      });
  }

  /** Applies the restricted node's user again (read-only now), remembering a server that did not take it. */
  async #readOnly(node: string): Promise<ApplyReport | undefined> {
    this.#notReadOnly.add(node);
    const applied = await this.#o.users.reapply(node);
    if (!applied || applied.failed.length === 0) this.#notReadOnly.delete(node);
    return applied;
  }

  get budgetBytes(): number {
    return this.#o.budgetBytes;
  }

  /** The restricted nodes, for GET /v1/redis-budget. */
  restricted(): Promise<Map<string, NodeRestriction>> {
    return this.#restrictions.all();
  }

  /** An operator lifts a node's restriction: its user gets its own rules back. Undefined: it was not restricted. */
  async release(node: string, asked: { by: string; why: string }): Promise<NodeRestriction | undefined> {
    const was = await this.#restrictions.lift(node);
    this.#notReadOnly.delete(node);
    if (!was) return undefined;
    await this.#o.users.reapply(node);
    await this.#audit('node-redis-released', node, { by: asked.by, why: `${asked.why} (was: restricted at ${was.at}, ${mib(was.usedBytes)})` });
    this.#o.log.info({ node, by: asked.by }, "node Redis budget: an operator released a node's restriction");
    return was;
  }

  async #audit(action: string, node: string, asked: { by: string; why: string }): Promise<void> {
    try {
      await this.#o.audit?.(action, `node/${node}`, asked);
    } catch (err) {
      this.#o.log.warn({ node, action, err: (err as Error).message }, 'node Redis budget: could not write the audit entry');
    }
  }

  /** Said once: with a budget above half of maxmemory, one node within its budget can still fill Redis. */
  #warnLimit(limits: readonly number[]): void {
    if (this.#warnedLimit) return;
    this.#warnedLimit = true;
    const max = Math.min(...limits.map((m) => (m > 0 ? m : Number.POSITIVE_INFINITY)));
    if (max === Number.POSITIVE_INFINITY)
      this.#o.log.warn('node Redis budget: Redis has no maxmemory; nodes are counted every NODE_REDIS_BUDGET_SCAN_SECONDS, never for pressure');
    else if (this.#o.budgetBytes > max / 2)
      this.#o.log.warn(
        { budgetBytes: this.#o.budgetBytes, maxmemory: max },
        'node Redis budget: NODE_REDIS_BUDGET_MIB is more than half of maxmemory: one node within its budget can still fill Redis',
      );
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}
