import { checkAuditList, FLEET_AUDIT_SCOPE, type AuditMark, type CheckedAuditEntry } from '../../core/controls/audit-seal.ts';
import { AuditEntry, parseJson } from '../../core/controls/records.ts';
import { controlKeys, queueControlKeys } from '../../core/controls/redis-keys.ts';
import type { ControlTrust } from '../../core/controls/sealed-records.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { AuditAppender } from './audit-append.ts';
import { AuditMarks } from './audit-marks.ts';
import { knownQueueNames, readEach } from './queue-reads.ts';

// The audit trail of the controls (ControlsStore.audit and its readers): the fleet list the
// receiver writes and each queue's own list its worker writes, numbered and sealed when appended
// (audit-append.ts), merged newest first and checked when read.

export interface Asked {
  by: string;
  why?: string;
}

/** Audit entries as read: checked ones say whether their writer's seal holds. */
export interface AuditRead {
  entries: Array<AuditEntry | CheckedAuditEntry>;
  /** Lists whose numbers do not add up (entries deleted, a list started again). */
  problems: Array<{ list: string; missing: string[]; restartedBelow?: number }>;
}

const AUDIT_KEEP = 1000;

export class AuditTrail {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #fleetKey: string;
  readonly #now: () => Date;
  readonly #audit: ControlTrust['audit'];
  /** What was seen of each audit list, kept in Redis: a list started again since is reported. */
  readonly #auditMarks: AuditMarks;
  readonly #appender: AuditAppender;

  /** `audit`: with a sealer, entries are sealed; with the roots, read entries are checked. */
  constructor(redis: RedisConnection, prefix: string, now: () => Date, audit: ControlTrust['audit']) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#fleetKey = controlKeys(prefix).audit;
    this.#now = now;
    this.#audit = audit;
    this.#appender = new AuditAppender(redis, audit?.sealer, AUDIT_KEEP);
    this.#auditMarks = new AuditMarks(redis, prefix);
  }

  /**
   * An entry in the audit trail: a worker's (`queue`: its own queue's list, which its Redis user
   * may write) or the receiver's (no queue: the fleet list, which no agent may write).
   */
  async audit(action: string, target: string, asked: Asked, queue?: string): Promise<void> {
    const entry: AuditEntry = { at: this.#now().toISOString(), by: asked.by, action, target, why: asked.why ?? '' };
    const key = queue === undefined ? this.#fleetKey : queueControlKeys(this.#prefix, queue).audit;
    // Numbered and sealed with that number: a reader sees what went missing (audit-seal.ts).
    await this.#appender.append(key, queue ?? FLEET_AUDIT_SCOPE, entry);
  }

  /** The newest `limit` entries of the fleet list and every known queue's, merged newest first. */
  async auditLog(limit = 100): Promise<AuditRead['entries']> {
    return (await this.auditReport(limit)).entries;
  }

  /**
   * auditLog, and per list what does not add up: numbers missing between the entries read, and a
   * list that started again since a receiver read it (audit-marks.ts). With the roots (the
   * receiver), every entry says whether its writer's seal holds and it is in its writer's name
   * (`verified`).
   */
  async auditReport(limit = 100): Promise<AuditRead> {
    const queues = await knownQueueNames(this.#redis, this.#prefix);
    const scopes = [FLEET_AUDIT_SCOPE, ...queues];
    const roots = this.#audit?.roots;
    const [lists, marks] = await Promise.all([
      readEach(this.#redis, [this.#fleetKey, ...queues.map((q) => queueControlKeys(this.#prefix, q).audit)], { cmd: 'lrange', count: limit }) as Promise<
        string[][]
      >,
      roots ? this.#auditMarks.read(scopes) : Promise.resolve([]),
    ]);
    const perList: AuditRead['entries'][] = [];
    const problems: AuditRead['problems'] = [];
    const raised = new Map<string, AuditMark>();
    lists.forEach((rows, i) => {
      const scope = scopes[i]!;
      if (!roots) {
        perList.push(rows.map((r) => parseJson(AuditEntry, r)).filter((e): e is AuditEntry => e !== undefined));
        return;
      }
      const seen = marks[i] ?? { seq: 0 };
      const c = checkAuditList(roots, scope, rows, seen);
      if (c.mark && c.mark.seq > seen.seq) raised.set(scope, c.mark);
      perList.push(c.entries);
      if (c.missing.length > 0 || c.restartedBelow !== undefined)
        problems.push({ list: scope, missing: c.missing, ...(c.restartedBelow !== undefined ? { restartedBelow: c.restartedBelow } : {}) });
    });
    await this.#auditMarks.raise(raised);
    return { entries: mergeNewestFirst(perList, limit), problems };
  }
}

/**
 * The lists merged newest first by time, each list's own entries kept in their stored order (its
 * writers' numbering): an entry whose append was retried carries a later number than its time
 * says, and sorting all by time would show one list's entries out of their order.
 */
function mergeNewestFirst<T extends { at: string }>(all: readonly (readonly T[])[], limit: number): T[] {
  const lists = all.filter((l) => l.length > 0);
  const heads = lists.map(() => 0);
  const out: T[] = [];
  while (out.length < limit) {
    let pick = -1;
    for (let i = 0; i < lists.length; i++) {
      const e = lists[i]![heads[i]!];
      if (e !== undefined && (pick === -1 || e.at > lists[pick]![heads[pick]!]!.at)) pick = i;
    }
    if (pick === -1) break;
    out.push(lists[pick]![heads[pick]!++]!);
  }
  return out;
}
