import { Cluster, type ChainableCommander } from 'ioredis';
import { AuditAppender } from './audit-append.ts';
import { AuditMarks } from './audit-marks.ts';
import { checkAuditList, FLEET_AUDIT_SCOPE, type AuditMark, type CheckedAuditEntry } from '../../core/controls/audit-seal.ts';
import { execAll } from '../redis/exec-all.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';
import type { Mode } from '../../core/catalogue/result.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import { controlKeys, queueControlKeys, type ControlKeys } from '../../core/controls/redis-keys.ts';
import { readEach } from './queue-reads.ts';
import { AuditEntry, ModeOverride, ParkedJob, PauseRecord, parseJson } from '../../core/controls/records.ts';
import {
  CONTROL_RESEAL_MS,
  CONTROL_SEAL_TTL_MS,
  SealedRecords,
  sealRecord,
  sealedAtField,
  splitSealed,
  type ControlTrust,
} from '../../core/controls/sealed-records.ts';
import { verifySeal } from '../../core/trust/seal.ts';
import { jobControlFields, relayFields, relayKey, relayedFor, type RelayedControls } from '../../core/controls/control-relay.ts';
import { ControlMirrors, MIRROR_FRESH_MS } from './control-mirrors.ts';
import { TransientError } from '../../core/errors.ts';

// Modes, pause switches, the audit trail and the list of parked jobs, kept in Redis so every
// receiver replica and every agent sees the same switches without a restart. Workers read them
// at each job's start and before each step; the API changes them, never by deleting a field
// (a clear is a sealed tombstone: sealed-records.ts).

export interface Asked {
  by: string;
  why?: string;
}

export interface Overrides {
  runbookOverride?: ModeOverride;
  nodeOverride?: ModeOverride;
}

/** Audit entries as read: checked ones say whether their writer's seal holds. */
export interface AuditRead {
  entries: Array<AuditEntry | CheckedAuditEntry>;
  /** Lists whose numbers do not add up (entries deleted, a list started again). */
  problems: Array<{ list: string; missing: string[]; restartedBelow?: number }>;
}

export interface StartView {
  overrides: Overrides;
  /** Why a job must wait now (a pause), if it must. */
  paused?: string;
}

const startFields = jobControlFields;

export type ModeScope = { runbook: string } | { node: string };
const scopeField = (s: ModeScope): string => ('runbook' in s ? `runbook/${s.runbook}` : `node/${s.node}`);
const AUDIT_KEEP = 1000;
/**
 * A parked record in the transition hash (keys.ts legacyParked) counts while younger than this:
 * an agent not yet upgraded parks its job again (a fresh `since`) at every recheck, so a live one
 * always is; one left behind by a job an upgraded agent then ran (it unparks under its queue
 * only) drops out instead of showing as waiting forever.
 */
const LEGACY_PARKED_FRESH_MS = 3600_000;

export interface Pauses {
  cluster?: PauseRecord;
  nodes: Record<string, PauseRecord>;
  /** Runbooks paused everywhere (every node and the cluster worker). */
  runbooks: Record<string, PauseRecord>;
}

/** What a pause covers: the cluster (undefined), one node (its name), or one runbook everywhere. */
export type PauseScope = string | { runbook: string } | undefined;
const pauseField = (s: PauseScope): string => (s === undefined ? 'cluster' : typeof s === 'string' ? `node/${s}` : `runbook/${s.runbook}`);

/** The field's next generation: the writer's clock in ms, forced above the field's last one. */
export const NEXT_GEN = luaScript(
  'volumeMedicNextGen',
  `
local last = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') or 0
local gen = tonumber(ARGV[2])
if gen <= last then gen = last + 1 end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d', gen))
return gen`,
  1,
);

/** HSET field only while it holds ARGV[2] ('' = absent). */
export const CAS_FIELD = luaScript(
  'volumeMedicCasField',
  `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1`,
  1,
);

export interface ControlsStoreOptions {
  /**
   * Copies of the modes and pauses in each node queue's slot (control-mirrors.ts): the writer
   * keeps them, a reader with `ownQueue` reads its own. Default: on a Cluster only (one server
   * needs no copies).
   */
  mirrors?: boolean;
  /** A node agent's queue: its job starts read that queue's copy, not the shared hashes. */
  ownQueue?: string;
  /** A reader's copy was missing or stale and the shared hashes were read instead. */
  onCopyMissed?: (queue: string) => void;
  /**
   * The reader's connection serves its own queue's slot only (ConnectOptions.oneSlot): without a
   * fresh copy it cannot read the shared hashes, and the job start fails (and is tried again).
   */
  copyOnly?: boolean;
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

export class ControlsStore {
  readonly redis: RedisConnection;
  readonly keys: ControlKeys;
  readonly #now: () => Date;
  readonly #sealed: SealedRecords;
  readonly #prefix: string;

  /** `trust`: the API seals what it writes; workers verify what they read (sealed-records.ts). */
  readonly #audit: ControlTrust['audit'];
  /** What was seen of each audit list, kept in Redis: a list started again since is reported. */
  readonly #auditMarks: AuditMarks;
  readonly #appender: AuditAppender;
  /** Copies in the node queues' slots, when kept (ControlsStoreOptions.mirrors). */
  readonly mirrors: ControlMirrors | undefined;
  readonly #o: ControlsStoreOptions;

  constructor(redis: RedisConnection, prefix: string, now: () => Date = () => new Date(), trust?: ControlTrust, o: ControlsStoreOptions = {}) {
    this.#o = o;
    this.mirrors = (o.mirrors ?? redis instanceof Cluster) ? new ControlMirrors(redis, prefix, () => now().getTime()) : undefined;
    this.#audit = trust?.audit;
    this.redis = redis;
    this.keys = controlKeys(prefix);
    this.#prefix = prefix;
    this.#now = now;
    this.#sealed = new SealedRecords(trust);
    this.#appender = new AuditAppender(redis, trust?.audit?.sealer, AUDIT_KEEP);
    this.#auditMarks = new AuditMarks(redis, prefix);
  }

  /**
   * Writes `record` (with the field's next generation, sealed) at `field` of `hash`, only while
   * the field still holds `expected` (null: nothing): a compare-and-set, so two writers (an
   * operator and the re-sealer of another replica) cannot undo each other. False when it changed.
   */
  async #write(hash: string, kind: 'mode' | 'pause', field: string, record: object, expected: string | null): Promise<boolean> {
    const gen = Number(await scriptOn(this.redis, NEXT_GEN)(this.keys.sealedAt, sealedAtField(kind, field), String(this.#now().getTime())));
    const { json } = sealRecord(this.#sealed.trust, kind, field, { ...record, gen });
    if ((await scriptOn(this.redis, CAS_FIELD)(hash, field, expected ?? '', json)) !== 1) return false;
    // This process's own reader takes it as the newest record too (it then notices a delete).
    this.#sealed.open(kind === 'mode' ? ModeOverride : PauseRecord, kind, field, json);
    // Into the agents' copies before the API answers: a pause answered is a pause every agent reads.
    await this.mirrors?.fanOut(kind, field, json);
    return true;
  }

  /**
   * Seals every standing mode and pause record (and tombstone) again before its seal lapses,
   * keeping its generation: the decision stands, and a copy taken before a change is worthless
   * to any reader once CONTROL_SEAL_TTL_MS has passed. Only records whose own seal still holds
   * are sealed again (a lapsed or forged record is never laundered). Returns how many.
   */
  async resealStanding(): Promise<number> {
    const trust = this.#sealed.trust;
    if (!trust?.sealer || !trust.ring) return 0;
    const now = this.#now().getTime();
    const lastGen = await this.redis.hgetall(this.keys.sealedAt);
    let count = 0;
    for (const [hash, kind] of [
      [this.keys.modes, 'mode'],
      [this.keys.pause, 'pause'],
    ] as const) {
      for (const [field, text] of Object.entries(await this.redis.hgetall(hash))) {
        const stored = splitSealed(text);
        if (!stored) continue;
        const { body, seal } = stored;
        const v = verifySeal(trust.ring, 'control', sealedAtField(kind, field), body, seal, now);
        if (!v.ok || v.seal.iss !== 'receiver' || v.seal.exp - now > CONTROL_SEAL_TTL_MS - CONTROL_RESEAL_MS) continue;
        if (this.#superseded(kind, field, text, body, lastGen[sealedAtField(kind, field)])) continue;
        const { json } = sealRecord(trust, kind, field, body);
        if ((await scriptOn(this.redis, CAS_FIELD)(hash, field, text, json)) === 1) count++;
      }
    }
    return count;
  }

  /**
   * A stored record older than a decision written since: one this process accepted (its
   * memory, which also takes the stored record if it is newer), or the field's generation counter
   * (keys.sealedAt: every replica's writes bump it, also before a restart of this one). Sealing it
   * again would turn a copy put back from before the change into a standing decision for good,
   * for every reader that never saw the change; left alone, its own seal lapses within
   * CONTROL_SEAL_TTL_MS. A write that failed after bumping the counter leaves the same picture:
   * that record then lapses too (an enforce falls back to configuration; a pause or dry-run still
   * holds), until the operator's next decision.
   */
  #superseded(kind: 'mode' | 'pause', field: string, text: string, body: Record<string, unknown>, counter: string | undefined): boolean {
    this.#sealed.open(kind === 'mode' ? ModeOverride : PauseRecord, kind, field, text);
    const gen = typeof body['gen'] === 'number' ? body['gen'] : 0;
    if (gen < (this.#sealed.newestGen(kind, field) ?? 0)) return true;
    if (!(gen < Number(counter ?? 0))) return false;
    this.#sealed.trust?.onUntrusted?.({
      kind,
      field,
      reason: 'replayed',
      detail: `generation ${gen} is older than the field's last written generation ${counter}: not sealed again (it lapses)`,
    });
    return true;
  }

  now(): Date {
    return this.#now();
  }

  /**
   * An entry in the audit trail: a worker's (`queue`: its own queue's list, which its Redis user
   * may write) or the receiver's (no queue: the fleet list, which no agent may write).
   */
  async audit(action: string, target: string, asked: Asked, queue?: string): Promise<void> {
    const entry: AuditEntry = { at: this.#now().toISOString(), by: asked.by, action, target, why: asked.why ?? '' };
    const key = queue === undefined ? this.keys.audit : queueControlKeys(this.#prefix, queue).audit;
    // Numbered and sealed with that number: a reader sees what went missing (audit-seal.ts).
    await this.#appender.append(key, queue ?? FLEET_AUDIT_SCOPE, entry);
  }

  /** The known queues (src/adapters/redis/known-queues.ts): whose lists the readers merge. */
  async #queues(): Promise<string[]> {
    return (await this.redis.smembers(knownQueuesKey(this.#prefix))).sort();
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
    const queues = await this.#queues();
    const scopes = [FLEET_AUDIT_SCOPE, ...queues];
    const roots = this.#audit?.roots;
    const [lists, marks] = await Promise.all([
      readEach(this.redis, [this.keys.audit, ...queues.map((q) => queueControlKeys(this.#prefix, q).audit)], { cmd: 'lrange', count: limit }) as Promise<
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

  // --- modes -----------------------------------------------------------------------------------

  async modeOverrides(): Promise<{ runbooks: Record<string, ModeOverride>; nodes: Record<string, ModeOverride> }> {
    const all = await this.redis.hgetall(this.keys.modes);
    const out = { runbooks: {} as Record<string, ModeOverride>, nodes: {} as Record<string, ModeOverride> };
    for (const [field, text] of Object.entries(all)) {
      const o = this.#sealed.open(ModeOverride, 'mode', field, text);
      if (!o) continue;
      if (field.startsWith('runbook/')) out.runbooks[field.slice(8)] = o;
      else if (field.startsWith('node/')) out.nodes[field.slice(5)] = o;
    }
    return out;
  }

  async overridesFor(runbook: string, node?: string): Promise<Overrides> {
    const [r, n] = await this.redis.hmget(this.keys.modes, `runbook/${runbook}`, node ? `node/${node}` : 'node/');
    return this.#overrides(runbook, node, r ?? null, n ?? null);
  }

  /**
   * What a job's start reads: its mode overrides and why it must wait (a pause), if it must, in
   * one round trip (a pipeline; on a Cluster the two hashes may sit on two masters: sent at once).
   * An unreadable answer throws: the job does not start on a guess.
   */
  async startView(runbook: string, node?: string): Promise<StartView> {
    return this.readStartView(await this.startReplies(runbook, node), runbook, node);
  }

  /** startView's reads, not yet opened (readStartView opens them): the caller may learn relayed records in between. */
  async startReplies(runbook: string, node?: string): Promise<unknown[]> {
    const own = this.#o.ownQueue;
    if (this.mirrors && own && node) {
      const copy = await this.mirrors.readStart(own, startFields(runbook, node));
      if (copy) return [copy.modes, copy.pause];
      if (this.#o.copyOnly)
        throw new TransientError(
          `this queue's copy of the controls is missing or older than ${MIRROR_FRESH_MS / 60_000} minutes (no receiver synced it), and this agent reads its own queue's slot only: the job starts once a receiver has synced it`,
        );
      this.#o.onCopyMissed?.(own);
    }
    if (this.redis instanceof Cluster) {
      const f = startFields(runbook, node);
      return Promise.all([this.redis.hmget(this.keys.modes, ...f.modes), this.redis.hmget(this.keys.pause, ...f.pause)]);
    }
    const p = this.redis.pipeline();
    this.queueStartView(p, runbook, node);
    return execAll(p);
  }

  /**
   * The receiver's side of the relay (src/core/controls/control-relay.ts): the newest record this
   * process accepted of every field `node`'s jobs read, after reading the shared hashes again
   * (an authentic newer record there is taken; an older one put back is refused as a replay, and
   * the newer one this process knows is what it relays). Fields with no record are left out.
   */
  async newestRecords(node: string): Promise<RelayedControls> {
    const fields = relayFields(node);
    const modes = fields.filter((f) => f.kind === 'mode').map((f) => f.field);
    const pauses = fields.filter((f) => f.kind === 'pause').map((f) => f.field);
    const [m, p] = await Promise.all([this.redis.hmget(this.keys.modes, ...modes), this.redis.hmget(this.keys.pause, ...pauses)]);
    const out: RelayedControls = {};
    const take = (kind: 'mode' | 'pause', names: string[], texts: (string | null)[]) =>
      names.forEach((field, i) => {
        this.#sealed.open(kind === 'mode' ? ModeOverride : PauseRecord, kind, field, texts[i] ?? null);
        const newest = this.#sealed.newestText(kind, field);
        if (newest) out[relayKey(kind, field)] = newest;
      });
    take('mode', modes, m);
    take('pause', pauses, p);
    return out;
  }

  /**
   * A node agent's side of the relay: the receiver's newest records of its fields taken as the
   * newest known before the job's own reads are opened (readStartView), so an older record read
   * from Redis is refused as a replay. Returns how many were newer than what this reader knew.
   */
  learnRelayed(node: string, relay: RelayedControls | undefined): number {
    let taken = 0;
    for (const r of relayedFor(node, relay)) if (this.#sealed.learn(r.kind === 'mode' ? ModeOverride : PauseRecord, r.kind, r.field, r.text)) taken++;
    return taken;
  }

  /** startView's two reads as the first commands of the caller's pipeline (single Redis only: two slots). */
  queueStartView(p: ChainableCommander, runbook: string, node?: string): void {
    const f = startFields(runbook, node);
    p.hmget(this.keys.modes, ...f.modes).hmget(this.keys.pause, ...f.pause);
  }

  /** startView's answer from the replies of its two reads (the first two of `replies`). */
  readStartView(replies: readonly unknown[], runbook: string, node?: string): StartView {
    const [modes, pause] = replies as [(string | null)[], (string | null)[]];
    if (!Array.isArray(modes) || !Array.isArray(pause)) throw new Error('the controls could not be read');
    const paused = this.#pausedWhy(node, runbook, pause[0] ?? null, pause[1] ?? null, pause[2] ?? null);
    return { overrides: this.#overrides(runbook, node, modes[0] ?? null, modes[1] ?? null), ...(paused ? { paused } : {}) };
  }

  #overrides(runbook: string, node: string | undefined, r: string | null, n: string | null): Overrides {
    const runbookOverride = this.#sealed.open(ModeOverride, 'mode', `runbook/${runbook}`, r);
    const nodeOverride = node ? this.#sealed.open(ModeOverride, 'mode', `node/${node}`, n) : undefined;
    return { ...(runbookOverride ? { runbookOverride } : {}), ...(nodeOverride ? { nodeOverride } : {}) };
  }

  /** `mode: null` clears the override (a sealed tombstone): the runbook (or node) goes back to configuration. */
  async setMode(scope: ModeScope, mode: Mode | null, asked: Asked): Promise<void> {
    const field = scopeField(scope);
    const decided = { by: asked.by, why: asked.why ?? '', at: this.#now().toISOString() };
    const record = mode === null ? { cleared: true as const, ...decided } : ({ mode, ...decided } satisfies ModeOverride);
    // The last writer wins, as before; the compare-and-set only keeps a re-sealer from undoing it.
    for (let tries = 0; tries < 5; tries++) {
      const current = await this.redis.hget(this.keys.modes, field);
      if (await this.#write(this.keys.modes, 'mode', field, record, current)) break;
      if (tries === 4) throw new Error(`mode ${field}: the record kept changing while it was written; try again`);
    }
    await this.audit(mode === null ? 'mode-cleared' : `mode-${mode}`, field, asked);
  }

  // --- pause -----------------------------------------------------------------------------------

  async pauses(): Promise<Pauses> {
    const all = await this.redis.hgetall(this.keys.pause);
    const out: Pauses = { nodes: {}, runbooks: {} };
    for (const [field, text] of Object.entries(all)) {
      const p = this.#sealed.open(PauseRecord, 'pause', field, text);
      if (!p) continue;
      if (field === 'cluster') out.cluster = p;
      else if (field.startsWith('node/')) out.nodes[field.slice(5)] = p;
      else if (field.startsWith('runbook/')) out.runbooks[field.slice(8)] = p;
    }
    return out;
  }

  /** Why a job of `runbook` for `node` (or a cluster job) must wait now, if it must. */
  #pausedWhy(node: string | undefined, runbook: string | undefined, c: string | null, n: string | null, r: string | null): string | undefined {
    const cluster = this.#sealed.open(PauseRecord, 'pause', 'cluster', c);
    if (cluster) return `cluster-wide pause by ${cluster.by} at ${cluster.at}${cluster.why ? `: ${cluster.why}` : ''}`;
    const mine = node ? this.#sealed.open(PauseRecord, 'pause', `node/${node}`, n) : undefined;
    if (mine) return `node ${node} paused by ${mine.by} at ${mine.at}${mine.why ? `: ${mine.why}` : ''}`;
    const book = runbook ? this.#sealed.open(PauseRecord, 'pause', `runbook/${runbook}`, r) : undefined;
    if (book) return `runbook ${runbook} paused by ${book.by} at ${book.at}${book.why ? `: ${book.why}` : ''}`;
    return undefined;
  }

  /** Pauses the cluster, one node or one runbook (PauseScope). Returns false when it already was. */
  async pause(scope: PauseScope, asked: Asked): Promise<boolean> {
    return this.#setPause(scope, asked, true);
  }

  /** Lifts the cluster-wide pause, one node's or one runbook's (a sealed tombstone); each pause stands on its own (a paused node stays paused after a cluster resume). */
  async resume(scope: PauseScope, asked: Asked): Promise<boolean> {
    return this.#setPause(scope, asked, false);
  }

  /** False when the pause already was (`pause`) or was not (`!pause`) standing. */
  async #setPause(scope: PauseScope, asked: Asked, pause: boolean): Promise<boolean> {
    const field = pauseField(scope);
    const decided = { by: asked.by, why: asked.why ?? '', at: this.#now().toISOString() };
    for (let tries = 0; tries < 5; tries++) {
      const current = await this.redis.hget(this.keys.pause, field);
      const standing = this.#sealed.open(PauseRecord, 'pause', field, current) !== undefined;
      if (pause && standing) return false;
      // A resume always writes its tombstone, also over a pause this process does not see
      // (deleted or forged in Redis): readers that remember one then let it go.
      if (await this.#write(this.keys.pause, 'pause', field, pause ? (decided satisfies PauseRecord) : { cleared: true as const, ...decided }, current)) {
        if (pause || standing) await this.audit(pause ? 'pause' : 'resume', field, asked);
        return pause || standing;
      }
    }
    throw new Error(`pause ${field}: the record kept changing while it was written; try again`);
  }

  // --- parked jobs -----------------------------------------------------------------------------

  /** Lists the job as parked, under its own queue (p.queue). */
  async park(p: ParkedJob): Promise<void> {
    await this.redis.hset(queueControlKeys(this.#prefix, p.queue).parked, p.jobId, JSON.stringify(p));
  }

  async unpark(queue: string, jobId: string): Promise<void> {
    await this.redis.hdel(queueControlKeys(this.#prefix, queue).parked, jobId);
  }

  /**
   * Every known queue's parked jobs (and the transition hash's live ones), oldest first. A
   * record counts only under the queue it names: a node's user can write its own hash only, and
   * a record there claiming another queue's job would otherwise get that job promoted or shown.
   * Its node is its queue's (a record in node-a's hash naming node-b is node-a's: shown, counted
   * and released as node-a's).
   */
  async parkedJobs(): Promise<ParkedJob[]> {
    const queues = await this.#queues();
    const hashes = (await readEach(this.redis, [this.keys.legacyParked, ...queues.map((q) => queueControlKeys(this.#prefix, q).parked)], {
      cmd: 'hgetall',
    })) as Record<string, string>[];
    const byId = new Map<string, ParkedJob>();
    const fresh = this.#now().getTime() - LEGACY_PARKED_FRESH_MS;
    for (const t of Object.values(hashes[0] ?? {})) {
      const p = parseJson(ParkedJob, t);
      if (p && Date.parse(p.since) >= fresh) byId.set(p.jobId, p);
    }
    queues.forEach((q, i) => {
      for (const [jobId, t] of Object.entries(hashes[i + 1] ?? {})) {
        const p = parseJson(ParkedJob, t);
        if (!p || p.queue !== q || p.jobId !== jobId) continue;
        const own = nodeOfQueue(q);
        byId.set(jobId, own === undefined || p.node === own ? p : { ...p, node: own });
      }
    });
    return [...byId.values()].sort((a, b) => a.since.localeCompare(b.since));
  }
}
