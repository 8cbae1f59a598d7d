import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { keyringFor } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealedJobText, sealJob, verifyJobSeal } from '../../../../src/core/trust/work.ts';

// The receiver stores sealedJobText: the job encoded once, for the MAC and as the stored text.
// It must be JSON.stringify of sealJob's result byte for byte (what BullMQ stored before), and
// verify where agents read it.

const ring = keyringFor('receiver', new Map([['receiver.k1', randomBytes(32)]]));
const now = 1_780_000_000_000;
const sealer = sealerOf(ring, () => now)!;

// Job-like values: any members but `seal` (a job has none), integer-like keys included (V8 puts them first).
const jobLike = fc
  .dictionary(
    fc.oneof(fc.string(), fc.nat().map(String)).filter((k) => k !== 'seal' && k !== '__proto__'),
    fc.jsonValue(),
    { minKeys: 1 },
  )
  .map((d) => ({ runbook: 'residual-multipath-cleanup', key: 'k1', ...d }) as unknown as RemediationJob);

describe('sealedJobText', () => {
  it("is JSON.stringify of sealJob's result, and its seal verifies as read back", () => {
    fc.assert(
      fc.property(jobLike, fc.string(), (job, queue) => {
        const text = sealedJobText(sealer, queue, job, 60_000);
        expect(text).toBe(JSON.stringify(sealJob(sealer, queue, job, 60_000)));
        expect(verifyJobSeal(ring, queue, job.key, JSON.parse(text), now)).toMatchObject({ ok: true });
      }),
      { numRuns: 300 },
    );
  });

  it('is refused on another queue or with a byte changed', () => {
    const job = {
      runbook: 'residual-multipath-cleanup',
      version: 1,
      key: 'res_1',
      target: { node: 'n1' },
      evidence: [{ source: 'api', summary: 's', raw: { a: 1 } }],
    } as RemediationJob;
    const text = sealedJobText(sealer, 'vm-node-{n1}', job, 60_000);
    expect(verifyJobSeal(ring, 'vm-node-{n2}', 'res_1', JSON.parse(text), now)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(verifyJobSeal(ring, 'vm-node-{n1}', 'res_1', JSON.parse(text.replace('"a":1', '"a":2')), now)).toMatchObject({
      ok: false,
      reason: 'bad-mac',
    });
  });
});
