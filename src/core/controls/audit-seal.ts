import { z } from '../zod.ts';
import type { Keyring } from '../trust/keyring.ts';
import type { Role } from '../trust/roles.ts';
import { Seal, verifySeal, type Sealer } from '../trust/seal.ts';
import { workRingFor } from '../trust/work-keys.ts';
import { AuditEntry } from './records.ts';
import { nodeOfQueue } from '../catalogue/queues.ts';

// Audit entries are numbered and sealed by their writer, so a reader can tell an entry someone
// wrote into Redis from one the process that acted wrote, and can tell when entries went missing.
// Each list has one writer: the fleet list the receiver, a node queue's list that node's agent, the
// cluster queue's list the cluster worker (and the receiver's replicas the fleet list). The writer
// seals the entry with the list's next number under its work key of the list's scope (the queue's
// name, or FLEET_AUDIT_SCOPE), and stores it only while that number is still the next
// (audit-append.ts): an agent holds only its own queue's key, so it can neither forge another
// list's entries nor move its own into another list. The receiver holds every root and checks all.
//
// An entry's `by` must be its list's writer too: a node's agent holds its queue's key and may seal
// anything into its own list, so an entry there in an operator's name (`alice@example.com` set
// enforce) proves nothing; operators' entries come only from the fleet list, which only the
// receiver seals.
//
// A gap between two entries' numbers is an entry deleted from the middle; a list whose newest
// number is below the highest the reader saw before, or whose entry of that number is not the one
// the reader saw (its MAC differs), was deleted and started again. Both are reported, never
// hidden. What the reader saw is kept in Redis by the receiver (src/adapters/controls/audit-marks.ts),
// so a receiver started afresh still notices a list started again since any replica read it.

/** The scope the fleet list's entries are sealed under (not a queue: no consumer holds its key). */
export const FLEET_AUDIT_SCOPE = 'vm:ctl:audit';

export const StoredAuditEntry = z.lazy(() =>
  z.extend(AuditEntry, {
    seq: z.optional(z.number().check(z.int(), z.positive())),
    seal: z.optional(Seal),
  }),
);
export type StoredAuditEntry = z.infer<typeof StoredAuditEntry>;

/** How long an audit seal is valid: as long as anyone will read the entry. */
const AUDIT_SEAL_TTL_MS = 400 * 24 * 3600 * 1000;

const subject = (scope: string, seq: number): string => `${scope}/${seq}`;

/** The stored form of `entry`, number `seq` of the list of `scope`, sealed by `sealer` when it has one. */
export function sealAuditEntry(sealer: Sealer | undefined, scope: string, seq: number, entry: AuditEntry): StoredAuditEntry {
  const numbered = { ...entry, seq };
  if (!sealer?.workFor) return numbered;
  return { ...numbered, seal: sealer.workFor(scope).seal('audit', subject(scope, seq), numbered, AUDIT_SEAL_TTL_MS) };
}

/** Who writes the list of `scope`. */
export function writerOf(scope: string): Role {
  if (scope === FLEET_AUDIT_SCOPE) return 'receiver';
  return scope.startsWith('vm-node-') ? 'node-agent' : 'cluster-worker';
}

/**
 * The `by` of every entry of the list of `scope`: a node queue's agent writes its node's name, the
 * cluster worker `cluster-worker` (workers/engine/job-controls.ts); the fleet list's entries
 * name whoever the receiver recorded (undefined: any).
 */
function authorOf(scope: string): string | undefined {
  switch (writerOf(scope)) {
    case 'receiver':
      return undefined;
    case 'node-agent':
      // A node queue's name that names no node (not `vm-node-{<node>}`): no entry of it is anyone's.
      return nodeOfQueue(scope) ?? '';
    case 'cluster-worker':
      return 'cluster-worker';
    default:
      return '';
  }
}

export type CheckedAuditEntry = AuditEntry & { seq?: number; verified: boolean; unverifiedWhy?: string };

/** What a reader keeps of a list between reads: the newest number whose seal held, and that entry's MAC. */
export interface AuditMark {
  seq: number;
  mac?: string;
}

export interface AuditCheck {
  entries: CheckedAuditEntry[];
  /** Numbers missing between entries read (newest first), as ranges `a-b`. */
  missing: string[];
  /**
   * The list started again since a reader saw this number: its newest entry whose seal holds has a
   * lower number, or its entry of this number is another one (entries deleted from the top or
   * altered, or the list deleted and started again).
   */
  restartedBelow?: number;
  /** This read's mark: the newest entry whose seal holds (undefined: none). */
  mark?: AuditMark;
}

/** Why one stored row does not verify as an entry of `scope`, or undefined when it does; `mac` when its seal holds. */
function checkRow(
  ring: Keyring,
  scope: string,
  numbered: AuditEntry & { seq?: number | undefined },
  seal: Seal | undefined,
  now: number,
): { why?: string; mac?: string } {
  if (numbered.seq === undefined) return { why: 'no number' };
  if (!seal) return { why: 'no seal' };
  const v = verifySeal(ring, 'audit', subject(scope, numbered.seq), numbered, seal, now);
  if (!v.ok) return { why: `${v.reason}: ${v.detail}` };
  const writer = writerOf(scope);
  if (v.seal.iss !== writer) return { why: `sealed by ${v.seal.iss}, but this list is written by the ${writer}` };
  const author = authorOf(scope);
  // The seal holds (the number is the list's), but its writer put words in someone else's mouth.
  if (author !== undefined && numbered.by !== author)
    return {
      mac: v.seal.mac,
      why: `recorded as by ${JSON.stringify(numbered.by.slice(0, 80))}, but only ${author === 'cluster-worker' ? 'the cluster worker' : `the agent of node ${author}`} writes this list: an operator's decisions are recorded in the fleet list only`,
    };
  return { mac: v.seal.mac };
}

/**
 * Checks the entries of one list (newest first, as stored): each seal against the roots' work key
 * of the list's scope and the list's writer, each `by` against that writer, and the numbers for
 * gaps. `seen`: what a reader saw of the list before (a number: the greatest; 0 when none).
 */
export function checkAuditList(roots: Keyring, scope: string, rows: readonly string[], seen: number | AuditMark = 0, now = Date.now()): AuditCheck {
  const ring = workRingFor(roots, scope);
  const entries: CheckedAuditEntry[] = [];
  /** Entries whose seal holds, by number: whatever their `by`, the writer stored them under that number. */
  const sealed: Array<{ seq: number; mac: string }> = [];
  for (const row of rows) {
    let parsed: StoredAuditEntry | undefined;
    try {
      const r = StoredAuditEntry.safeParse(JSON.parse(row));
      parsed = r.success ? r.data : undefined;
    } catch {
      parsed = undefined;
    }
    if (!parsed) continue;
    const { seal, ...numbered } = parsed;
    const c = checkRow(ring, scope, numbered, seal, now);
    if (c.mac !== undefined && numbered.seq !== undefined) sealed.push({ seq: numbered.seq, mac: c.mac });
    entries.push({ ...numbered, verified: c.why === undefined, ...(c.why ? { unverifiedWhy: c.why } : {}) });
  }
  const missing: string[] = [];
  for (let i = 1; i < sealed.length; i++) {
    const newer = sealed[i - 1]!.seq;
    const older = sealed[i]!.seq;
    if (newer - older > 1) missing.push(newer - older === 2 ? String(older + 1) : `${older + 1}-${newer - 1}`);
  }
  const before = typeof seen === 'number' ? { seq: seen } : seen;
  const newest = sealed[0];
  const again = sealed.find((e) => e.seq === before.seq);
  const restarted = (newest?.seq ?? 0) < before.seq || (before.mac !== undefined && again !== undefined && again.mac !== before.mac);
  return { entries, missing, ...(restarted ? { restartedBelow: before.seq } : {}), ...(newest ? { mark: newest } : {}) };
}
