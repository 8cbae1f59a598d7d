import { Cluster, type ChainableCommander } from 'ioredis';
import { execAll } from '../queues/exec-all.ts';
import type { RedisConnection } from '../queues/redis.ts';
import type { Mode } from '../catalogue/result.ts';
import { controlKeys, type ControlKeys } from './keys.ts';
import { AuditEntry, ModeOverride, ParkedJob, PauseRecord, parseJson } from './records.ts';
import { SealedRecords, sealRecord, sealedAtField, type ControlKind, type ControlTrust } from './sealed-records.ts';

// Modes, pause switches, the audit trail and the list of parked jobs, kept in Redis so every
// receiver replica and every agent sees the same switches without a restart. Workers read them
// at each job's start (and the pause before each step); the API changes them.

export interface Asked {
  by: string;
  why?: string;
}

export interface Overrides {
  runbookOverride?: ModeOverride;
  nodeOverride?: ModeOverride;
}

export interface StartView {
  overrides: Overrides;
  /** Why a job must wait now (a pause), if it must. */
  paused?: string;
}

const startFields = (runbook: string, node?: string) => {
  const nodeField = node ? `node/${node}` : 'node/';
  return { modes: [`runbook/${runbook}`, nodeField], pause: ['cluster', nodeField, `runbook/${runbook}`] };
};

export type ModeScope = { runbook: string } | { node: string };
const scopeField = (s: ModeScope): string => ('runbook' in s ? `runbook/${s.runbook}` : `node/${s.node}`);
const AUDIT_KEEP = 1000;

export interface Pauses {
  cluster?: PauseRecord;
  nodes: Record<string, PauseRecord>;
  /** Runbooks paused everywhere (every node and the cluster worker). */
  runbooks: Record<string, PauseRecord>;
}

/** What a pause covers: the cluster (undefined), one node (its name), or one runbook everywhere. */
export type PauseScope = string | { runbook: string } | undefined;
export const pauseField = (s: PauseScope): string => (s === undefined ? 'cluster' : typeof s === 'string' ? `node/${s}` : `runbook/${s.runbook}`);

export class ControlsStore {
  readonly redis: RedisConnection;
  readonly keys: ControlKeys;
  readonly #now: () => Date;
  readonly #sealed: SealedRecords;

  /** `trust`: the API seals what it writes; workers verify what they read (sealed-records.ts). */
  constructor(redis: RedisConnection, prefix: string, now: () => Date = () => new Date(), trust?: ControlTrust) {
    this.redis = redis;
    this.keys = controlKeys(prefix);
    this.#now = now;
    this.#sealed = new SealedRecords(trust);
  }

  /** The JSON to store at `field`, sealed later than anything the API sealed there before. */
  async #sealFor(kind: ControlKind, field: string, record: object): Promise<{ json: string; commit: () => Promise<unknown> }> {
    if (!this.#sealed.trust?.sealer) return { json: JSON.stringify(record), commit: async () => {} };
    const at = sealedAtField(kind, field);
    const last = Number(await this.redis.hget(this.keys.sealedAt, at)) || 0;
    const { json, iat } = sealRecord(this.#sealed.trust, kind, field, record, { notBefore: last + 1 });
    return { json, commit: () => this.redis.hset(this.keys.sealedAt, at, String(iat)) };
  }

  now(): Date {
    return this.#now();
  }

  async audit(action: string, target: string, asked: Asked): Promise<void> {
    const entry: AuditEntry = { at: this.#now().toISOString(), by: asked.by, action, target, why: asked.why ?? '' };
    await this.redis.multi().lpush(this.keys.audit, JSON.stringify(entry)).ltrim(this.keys.audit, 0, AUDIT_KEEP - 1).exec();
  }

  async auditLog(limit = 100): Promise<AuditEntry[]> {
    const rows = await this.redis.lrange(this.keys.audit, 0, limit - 1);
    return rows.map((r) => parseJson(AuditEntry, r)).filter((e): e is AuditEntry => e !== undefined);
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
    if (this.redis instanceof Cluster) {
      const f = startFields(runbook, node);
      const [modes, pause] = await Promise.all([this.redis.hmget(this.keys.modes, ...f.modes), this.redis.hmget(this.keys.pause, ...f.pause)]);
      return this.readStartView([modes, pause], runbook, node);
    }
    const p = this.redis.pipeline();
    this.queueStartView(p, runbook, node);
    return this.readStartView(await execAll(p), runbook, node);
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

  /** `mode: null` removes the override: the runbook (or node) goes back to configuration. */
  async setMode(scope: ModeScope, mode: Mode | null, asked: Asked): Promise<void> {
    const field = scopeField(scope);
    if (mode === null) await this.redis.hdel(this.keys.modes, field);
    else {
      const { json, commit } = await this.#sealFor('mode', field, { mode, by: asked.by, why: asked.why ?? '', at: this.#now().toISOString() } satisfies ModeOverride);
      await this.redis.hset(this.keys.modes, field, json);
      await commit();
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
    const field = pauseField(scope);
    const rec: PauseRecord = { by: asked.by, why: asked.why ?? '', at: this.#now().toISOString() };
    const { json, commit } = await this.#sealFor('pause', field, rec);
    const added = await this.redis.hsetnx(this.keys.pause, field, json);
    if (added) await Promise.all([commit(), this.audit('pause', field, asked)]);
    return added === 1;
  }

  /** Lifts the cluster-wide pause, one node's or one runbook's; each pause stands on its own (a paused node stays paused after a cluster resume). */
  async resume(scope: PauseScope, asked: Asked): Promise<boolean> {
    const field = pauseField(scope);
    const removed = await this.redis.hdel(this.keys.pause, field);
    if (removed) await this.audit('resume', field, asked);
    return removed === 1;
  }

  // --- parked jobs -----------------------------------------------------------------------------

  async park(p: ParkedJob): Promise<void> {
    await this.redis.hset(this.keys.parked, p.jobId, JSON.stringify(p));
  }

  async unpark(jobId: string): Promise<void> {
    await this.redis.hdel(this.keys.parked, jobId);
  }

  async parkedJobs(): Promise<ParkedJob[]> {
    const all = await this.redis.hgetall(this.keys.parked);
    return Object.values(all).map((t) => parseJson(ParkedJob, t)).filter((p): p is ParkedJob => p !== undefined)
      .sort((a, b) => a.since.localeCompare(b.since));
  }
}

