import { describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { ringOfAnswer } from '../../../../src/core/trust/enrolment-wire.ts';
import { GenerationTable, generationOfKey, otherGeneration } from '../../../../src/core/trust/key-generations.ts';
import type { Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealJob, verifyJobSeal } from '../../../../src/core/trust/work.ts';
import { workKeyOf, workRingFor } from '../../../../src/core/trust/work-keys.ts';
import { queueKeys } from '../../../../src/control/enrolment/node-credentials.ts';

// Revocable node credentials (issue 44, item 5): a node's work keys depend on its generation,
// generation 0 is the derivation every node had before (pinned against an independent HMAC), and
// work sealed with one generation is refused by a holder of another, saying so.

const ROOT = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const A = nodeQueueName('node-a');
const DAY = 86_400_000;
const job: RemediationJob = {
  version: 1,
  key: 'j1',
  runbook: 'residual-multipath-cleanup',
  target: { node: 'node-a' },
  evidence: [{ source: 'api', summary: 's', raw: null }],
};
const roots = (generations?: GenerationTable): Keyring => ({
  signing: { role: 'receiver', kid: 'k1', key: ROOT },
  verify: new Map([
    ['receiver.k1', ROOT],
    ['node-agent.k1', ROOT],
  ]),
  ...(generations ? { generations } : {}),
});
/** What an agent of node-a enrolled at `generation` holds. */
const enrolledAt = (generation: number): Keyring =>
  ringOfAnswer({ queue: A, keys: queueKeys(roots(), ['receiver', 'node-agent'], A, generation), signing: 'node-agent.k1', renewAfterSeconds: 60 });

describe('node credential generations', () => {
  it('derives generation 0 exactly as before generations existed (HMAC-SHA256 of the v1 label)', () => {
    // python3: hmac.new(bytes(range(32)), b'volume-medic/work/v1\0receiver\0vm-node-{node-a}', sha256)
    expect(workKeyOf(ROOT, 'receiver', A).toString('hex')).toBe('f7f2504013b91c7f047aedf002379ffbbe90d8a4b3edc0395b8315634feb0157');
    expect(workKeyOf(ROOT, 'node-agent', A, 0).toString('hex')).toBe('fdec2fc44ce430087003947987eca4e6de94c884ce075d662f323a58f288918a');
    // Keys of generation 0 keep their names, and a ring without generations derives generation 0.
    expect(Object.keys(queueKeys(roots(), ['receiver'], A, 0))).toEqual(['receiver.k1']);
    expect(workRingFor(roots(), A).verify.get('receiver.k1')).toEqual(workKeyOf(ROOT, 'receiver', A));
  });

  it('gives every generation other keys, named for it', () => {
    const seen = new Set([0, 1, 2, 3].map((g) => workKeyOf(ROOT, 'receiver', A, g).toString('hex')));
    expect(seen.size).toBe(4);
    expect(Object.keys(queueKeys(roots(), ['receiver', 'node-agent'], A, 3)).sort()).toEqual(['node-agent.k1.g3', 'receiver.k1.g3']);
    expect(generationOfKey('receiver.k1.g3')).toEqual({ base: 'receiver.k1', generation: 3 });
    expect(generationOfKey('receiver.k1')).toEqual({ base: 'receiver.k1', generation: 0 });
  });

  it("seals and checks a queue's work at the queue's current generation, following a raise", () => {
    const table = new GenerationTable();
    const ring = roots(table);
    const sealer = sealerOf(ring)!;
    const before = sealJob(sealer, A, job, DAY);
    expect(before.seal.kid).toBe('k1');
    expect(table.raise(A, 2)).toBe(true);
    const after = sealJob(sealer, A, job, DAY);
    expect(after.seal.kid).toBe('k1.g2');
    const now = Date.now();
    expect(verifyJobSeal(ring, A, 'j1', after, now)).toMatchObject({ ok: true });
    expect(verifyJobSeal(enrolledAt(2), A, 'j1', after, now)).toMatchObject({ ok: true });
    // Another node's queue is untouched.
    expect(sealJob(sealer, nodeQueueName('node-b'), { ...job, target: { node: 'node-b' } }, DAY).seal.kid).toBe('k1');
  });

  it('refuses work sealed with a revoked generation, and says so; and a later one it does not hold yet', () => {
    const table = new GenerationTable();
    const sealer = sealerOf(roots(table))!;
    const old = sealJob(sealer, A, job, DAY);
    table.raise(A, 1);
    const now = Date.now();
    expect(verifyJobSeal(enrolledAt(1), A, 'j1', old, now)).toEqual({
      ok: false,
      reason: 'unknown-key',
      detail: "sealed with generation 0 of this queue's keys, which was revoked (this process holds generation 1)",
    });
    expect(verifyJobSeal(enrolledAt(0), A, 'j1', sealJob(sealer, A, job, DAY), now)).toMatchObject({
      ok: false,
      reason: 'unknown-key',
      detail: expect.stringContaining('holds generation 0 and enrols again'),
    });
    expect(otherGeneration(['receiver.k1.g2'], 'receiver.other')).toBeUndefined();
  });

  it('only ever raises a generation in memory: a lower or invalid one read back changes nothing', () => {
    const t = new GenerationTable();
    expect(t.raise(A, 3)).toBe(true);
    expect(t.raise(A, 2)).toBe(false);
    expect(t.raise(A, 3)).toBe(false);
    expect(t.raise(A, Number.NaN)).toBe(false);
    expect(t.raise(A, -1)).toBe(false);
    expect(t.of(A)).toBe(3);
    expect(t.of(nodeQueueName('node-b'))).toBe(0);
  });
});
