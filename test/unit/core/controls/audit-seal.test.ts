import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { checkAuditList, FLEET_AUDIT_SCOPE, sealAuditEntry } from '../../../../src/core/controls/audit-seal.ts';
import type { AuditEntry } from '../../../../src/core/controls/records.ts';
import { keyringFor, type Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';

// Audit entries numbered and sealed by their list's one writer: the receiver verifies every list
// with its roots, and an entry forged, altered, moved to another list or deleted shows.

const roots = new Map([
  ['receiver.k', randomBytes(32)],
  ['cluster-worker.k', randomBytes(32)],
  ['node-agent.k', randomBytes(32)],
]);
const receiverRing = keyringFor('receiver', roots);
const receiver = sealerOf(receiverRing)!;
/** What node `n`'s enrolled agent holds: its queue's node-agent key only. */
const agentOf = (n: string) => {
  const queue = nodeQueueName(n);
  const key = workKeyOf(roots.get('node-agent.k')!, 'node-agent', queue);
  const ring: Keyring = { verify: new Map([['node-agent.k', key]]), signing: { role: 'node-agent', kid: 'k', key }, scope: queue };
  return sealerOf(ring)!;
};
const entry = (why: string): AuditEntry => ({ at: '2026-12-05T00:00:00.000Z', by: 'node-a', action: 'work-refused', target: 'job/x', why });
const rows = (...e: object[]) => e.map((x) => JSON.stringify(x));

describe('sealed, numbered audit entries', () => {
  const qa = nodeQueueName('node-a');

  it("verifies each list's own writer: the receiver in the fleet list, an agent in its own queue's", () => {
    const fleet = checkAuditList(
      receiverRing,
      FLEET_AUDIT_SCOPE,
      rows(sealAuditEntry(receiver, FLEET_AUDIT_SCOPE, 2, entry('b')), sealAuditEntry(receiver, FLEET_AUDIT_SCOPE, 1, entry('a'))),
    );
    expect(fleet.entries.map((e) => e.verified)).toEqual([true, true]);
    expect(fleet.missing).toEqual([]);
    const own = checkAuditList(receiverRing, qa, rows(sealAuditEntry(agentOf('node-a'), qa, 1, entry('a'))));
    expect(own.entries[0]).toMatchObject({ verified: true, seq: 1 });
  });

  it("marks an entry written straight into Redis, one altered, one moved to another node's list, and an agent's in the fleet list", () => {
    const sealed = sealAuditEntry(agentOf('node-a'), qa, 3, entry('real'));
    const checked = checkAuditList(receiverRing, qa, rows({ ...entry('forged'), seq: 4 }, { ...sealed, why: 'edited' }));
    expect(checked.entries.map((e) => [e.verified, e.unverifiedWhy?.split(':')[0]])).toEqual([
      [false, 'no seal'],
      [false, 'bad-mac'],
    ]);
    // Node a's agent cannot make node b's entries, nor put its own there.
    const qb = nodeQueueName('node-b');
    expect(() => sealAuditEntry(agentOf('node-a'), qb, 1, entry('x'))).toThrow(/only/);
    expect(checkAuditList(receiverRing, qb, rows(sealed)).entries[0]).toMatchObject({ verified: false });
    // Nor the fleet list's (the receiver's): its key for that scope is not the agent's.
    const inFleet = checkAuditList(receiverRing, FLEET_AUDIT_SCOPE, rows(sealAuditEntry(receiver, qa, 1, entry('x'))));
    expect(inFleet.entries[0]).toMatchObject({ verified: false });
    expect(checkAuditList(receiverRing, qa, rows(sealAuditEntry(receiver, qa, 1, entry('x')))).entries[0]?.unverifiedWhy).toMatch(/written by the node-agent/);
  });

  it('says which numbers are missing and when a list started again', () => {
    const a = agentOf('node-a');
    const list = rows(...[9, 8, 5, 3].map((n) => sealAuditEntry(a, qa, n, entry(`n${n}`))));
    expect(checkAuditList(receiverRing, qa, list).missing).toEqual(['6-7', '4']);
    expect(checkAuditList(receiverRing, qa, rows(sealAuditEntry(a, qa, 1, entry('again'))), 9).restartedBelow).toBe(9);
    expect(checkAuditList(receiverRing, qa, list, 9).restartedBelow).toBeUndefined();
  });

  it("marks an entry its list's writer sealed in someone else's name, and still counts its number", () => {
    const a = agentOf('node-a');
    const inAlicesName = { ...entry('go'), by: 'alice@example.com', action: 'mode-enforce', target: 'runbook/residual-multipath-cleanup' };
    const checked = checkAuditList(
      receiverRing,
      qa,
      rows(sealAuditEntry(a, qa, 3, entry('c')), sealAuditEntry(a, qa, 2, inAlicesName), sealAuditEntry(a, qa, 1, entry('a'))),
    );
    expect(checked.entries.map((e) => e.verified)).toEqual([true, false, true]);
    expect(checked.entries[1]!.unverifiedWhy).toMatch(/by "alice@example.com", but only the agent of node node-a writes this list/);
    // Its seal holds: number 2 was stored, nothing is missing.
    expect(checked.missing).toEqual([]);
    // Nor is node-b's name node-a's to use, nor an operator's the cluster worker's.
    expect(checkAuditList(receiverRing, qa, rows(sealAuditEntry(a, qa, 1, { ...entry('x'), by: 'node-b' }))).entries[0]).toMatchObject({ verified: false });
    const cluster = sealerOf(keyringFor('cluster-worker', roots))!;
    const cq = 'vm-cluster-{cluster}';
    expect(checkAuditList(receiverRing, cq, rows(sealAuditEntry(cluster, cq, 1, { ...entry('x'), by: 'cluster-worker' }))).entries[0]).toMatchObject({
      verified: true,
    });
    expect(checkAuditList(receiverRing, cq, rows(sealAuditEntry(cluster, cq, 1, { ...entry('x'), by: 'kim' }))).entries[0]).toMatchObject({ verified: false });
    // The fleet list's entries are the operators' own.
    expect(
      checkAuditList(receiverRing, FLEET_AUDIT_SCOPE, rows(sealAuditEntry(receiver, FLEET_AUDIT_SCOPE, 1, { ...entry('x'), by: 'kim' }))).entries[0],
    ).toMatchObject({
      verified: true,
    });
  });

  it('notices a list started again that has since passed the number read before: that entry is another one', () => {
    const a = agentOf('node-a');
    const first = checkAuditList(receiverRing, qa, rows(...[3, 2, 1].map((n) => sealAuditEntry(a, qa, n, entry(`n${n}`)))));
    expect(first.mark).toMatchObject({ seq: 3, mac: expect.any(String) });
    const again = rows(...[4, 3, 2, 1].map((n) => sealAuditEntry(a, qa, n, entry(`again${n}`))));
    expect(checkAuditList(receiverRing, qa, again, first.mark).restartedBelow).toBe(3);
    // The same list, grown: no restart.
    const grown = rows(sealAuditEntry(a, qa, 4, entry('n4')), ...[3, 2, 1].map((n) => sealAuditEntry(a, qa, n, entry(`n${n}`))));
    const sameEntries = checkAuditList(receiverRing, qa, grown, { seq: 3, mac: JSON.parse(grown[1]!).seal.mac });
    expect(sameEntries.restartedBelow).toBeUndefined();
    expect(sameEntries.mark?.seq).toBe(4);
  });
});
