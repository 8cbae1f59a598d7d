import { z } from '../zod.ts';
import type { Keyring } from '../trust/keyring.ts';
import type { Role } from '../trust/roles.ts';
import { Seal, verifySeal, type Sealer } from '../trust/seal.ts';
import { workRingFor } from '../trust/work-keys.ts';
import { AuditEntry } from './records.ts';

// Audit entries are numbered and sealed by their writer, so a reader can tell an entry someone
// wrote into Redis from one the process that acted wrote, and can tell when entries went missing.
// Each list has one writer: the fleet list the receiver, a node queue's list that node's agent, the
// cluster queue's list the cluster worker (and the receiver's replicas the fleet list). The writer
// seals the entry with the list's next number under its work key of the list's scope (the queue's
// name, or FLEET_AUDIT_SCOPE), and stores it only while that number is still the next
// (audit-append.ts): an agent holds only its own queue's key, so it can neither forge another
// list's entries nor move its own into another list. The receiver holds every root and checks all.
//
// A gap between two entries' numbers is an entry deleted from the middle; a list whose newest
// number is below the highest the reader saw before was deleted and started again. Both are
// reported, never hidden.

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

export type CheckedAuditEntry = AuditEntry & { seq?: number; verified: boolean; unverifiedWhy?: string };

export interface AuditCheck {
  entries: CheckedAuditEntry[];
  /** Numbers missing between entries read (newest first), as ranges `a-b`. */
  missing: string[];
  /**
   * The newest entry that verifies has a lower number than this one, seen before: entries were
   * deleted from the top or altered, or the list was deleted and started again.
   */
  restartedBelow?: number;
}

/**
 * Checks the entries of one list (newest first, as stored): each seal against the roots' work key
 * of the list's scope and the list's writer, and the numbers for gaps. `highestSeen`: the greatest
 * number this reader saw in the list before (0 when none).
 */
export function checkAuditList(roots: Keyring, scope: string, rows: readonly string[], highestSeen = 0, now = Date.now()): AuditCheck {
  const ring = workRingFor(roots, scope);
  const writer = writerOf(scope);
  const entries: CheckedAuditEntry[] = [];
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
    let unverifiedWhy: string | undefined;
    if (numbered.seq === undefined) unverifiedWhy = 'no number';
    else if (!seal) unverifiedWhy = 'no seal';
    else {
      const v = verifySeal(ring, 'audit', subject(scope, numbered.seq), numbered, seal, now);
      if (!v.ok) unverifiedWhy = `${v.reason}: ${v.detail}`;
      else if (v.seal.iss !== writer) unverifiedWhy = `sealed by ${v.seal.iss}, but this list is written by the ${writer}`;
    }
    entries.push({ ...numbered, verified: unverifiedWhy === undefined, ...(unverifiedWhy ? { unverifiedWhy } : {}) });
  }
  const numbers = entries.filter((e) => e.verified && e.seq !== undefined).map((e) => e.seq!);
  const missing: string[] = [];
  for (let i = 1; i < numbers.length; i++) {
    const newer = numbers[i - 1]!;
    const older = numbers[i]!;
    if (newer - older > 1) missing.push(newer - older === 2 ? String(older + 1) : `${older + 1}-${newer - 1}`);
  }
  const newest = numbers[0] ?? 0;
  return { entries, missing, ...(newest < highestSeen ? { restartedBelow: highestSeen } : {}) };
}
