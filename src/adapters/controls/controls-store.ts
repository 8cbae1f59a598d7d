import { Cluster, type ChainableCommander } from 'ioredis';
import type { Mode } from '../../core/catalogue/result.ts';
import { jobControlFields, relayFields, relayKey, relayedFor, type RelayedControls } from '../../core/controls/control-relay.ts';
import { ModeOverride, type ParkedJob, PauseRecord } from '../../core/controls/records.ts';
import { controlKeys, type ControlKeys } from '../../core/controls/redis-keys.ts';
import {
  CONTROL_RESEAL_MS,
  CONTROL_SEAL_TTL_MS,
  SealedRecords,
  sealRecord,
  sealedAtField,
  splitSealed,
  type ControlTrust,
} from '../../core/controls/sealed-records.ts';
import { TransientError } from '../../core/errors.ts';
import { verifySeal } from '../../core/trust/seal.ts';
import { execAll } from '../redis/exec-all.ts';
import { scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { type Asked, type AuditRead, AuditTrail } from './audit-trail.ts';
import { CAS_FIELD, NEXT_GEN } from './control-scripts.ts';
import { ControlMirrors, MIRROR_FRESH_MS } from './control-mirrors.ts';
import { ParkedJobs } from './parked-jobs.ts';

// Modes, pause switches, the audit trail and the list of parked jobs, kept in Redis so every
// receiver replica and every agent sees the same switches without a restart. Workers read them
// at each job's start and before each step; the API changes them, never by deleting a field
// (a clear is a sealed tombstone: sealed-records.ts). The audit trail is audit-trail.ts, the parked
// jobs parked-jobs.ts, behind this one store.

export interface Overrides {
  runbookOverride?: ModeOverride;
  nodeOverride?: ModeOverride;
}

export interface StartView {
  overrides: Overrides;
  /** Why a job must wait now (a pause), if it must. */
  paused?: string;
}

const startFields = jobControlFields;

export type ModeScope = { runbook: string } | { node: string };
const scopeField = (s: ModeScope): string => ('runbook' in s ? `runbook/${s.runbook}` : `node/${s.node}`);
export interface Pauses {
  cluster?: PauseRecord;
  nodes: Record<string, PauseRecord>;
  /** Runbooks paused everywhere (every node and the cluster worker). */
  runbooks: Record<string, PauseRecord>;
}

/** What a pause covers: the cluster (undefined), one node (its name), or one runbook everywhere. */
export type PauseScope = string | { runbook: string } | undefined;
const pauseField = (s: PauseScope): string => (s === undefined ? 'cluster' : typeof s === 'string' ? `node/${s}` : `runbook/${s.runbook}`);

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

export class ControlsStore {
  readonly redis: RedisConnection;
  readonly keys: ControlKeys;
  readonly #now: () => Date;
  readonly #sealed: SealedRecords;

  /** `trust`: the API seals what it writes; workers verify what they read (sealed-records.ts). */
  readonly #trail: AuditTrail;
  readonly #parked: ParkedJobs;
  /** Copies in the node queues' slots, when kept (ControlsStoreOptions.mirrors). */
  readonly mirrors: ControlMirrors | undefined;
  readonly #o: ControlsStoreOptions;

  constructor(redis: RedisConnection, prefix: string, now: () => Date = () => new Date(), trust?: ControlTrust, o: ControlsStoreOptions = {}) {
    this.#o = o;
    this.mirrors = (o.mirrors ?? redis instanceof Cluster) ? new ControlMirrors(redis, prefix, () => now().getTime()) : undefined;
    this.redis = redis;
    this.keys = controlKeys(prefix);
    this.#now = now;
    this.#sealed = new SealedRecords(trust);
    this.#trail = new AuditTrail(redis, prefix, now, trust?.audit);
    this.#parked = new ParkedJobs(redis, prefix, now);
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
  audit(action: string, target: string, asked: Asked, queue?: string): Promise<void> {
    return this.#trail.audit(action, target, asked, queue);
  }

  /** The newest `limit` entries of the fleet list and every known queue's, merged newest first. */
  auditLog(limit = 100): Promise<AuditRead['entries']> {
    return this.#trail.auditLog(limit);
  }

  /** auditLog, and per list what does not add up (AuditTrail.auditReport). */
  auditReport(limit = 100): Promise<AuditRead> {
    return this.#trail.auditReport(limit);
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
  park(p: ParkedJob): Promise<void> {
    return this.#parked.park(p);
  }

  unpark(queue: string, jobId: string): Promise<void> {
    return this.#parked.unpark(queue, jobId);
  }

  /** Every known queue's parked jobs (and the transition hash's live ones), oldest first (ParkedJobs.parkedJobs). */
  parkedJobs(): Promise<ParkedJob[]> {
    return this.#parked.parkedJobs();
  }
}
