import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../src/core/config/load.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import fc from 'fast-check';
import { sealedBytes } from '../../../../src/core/trust/encoding.ts';
import { trustFromConfig } from '../../../../src/core/trust/from-config.ts';
import { KeyringError, keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf, verifySeal } from '../../../../src/core/trust/seal.ts';
import { issuerMayNot } from '../../../../src/core/trust/work.ts';
import { writeKeysDir } from '../../../support/trust.ts';

const ring = (role: 'receiver' | 'cluster-worker' | 'node-agent', key = randomBytes(32)) => keyringFor(role, new Map([[`${role}.k1`, key]]));

describe('the sealed encoding', () => {
  it('is what the verifier recomputes from the stored JSON, for any value', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withObjectString: true,
          withNullPrototype: true,
          withBigInt: false,
          withDate: true,
          withMap: false,
          withSet: false,
          withTypedArray: false,
          withSparseArray: true,
          withBoxedValues: false,
        }),
        (v) => {
          const stored = JSON.stringify(v);
          if (stored === undefined) return;
          expect(sealedBytes(JSON.parse(stored))).toBe(sealedBytes(v));
        },
      ),
      { numRuns: 2000 },
    );
    // Integer-like keys, lone surrogates, -0, undefined members: the same bytes after a round trip.
    const v = { b: 1, 10: 'x', 2: 'y', s: 'é\u2028"\\\ud800', n: -0, u: undefined, a: [1, undefined, () => 1] };
    expect(sealedBytes(JSON.parse(JSON.stringify(v)))).toBe(sealedBytes(v));
  });

  it('a seal holds after its value went through Redis as JSON, and breaks when re-encoded in another key order', () => {
    const r = keyringFor('receiver', new Map([['receiver.k1', randomBytes(32)]]));
    const value = { runbook: 'x', target: { node: 'n', 7: 'seven' }, evidence: [{ raw: { z: 1, a: [null, 'é'] } }] };
    const s = sealerOf(r)!.seal('job', 'q/1', value, 60_000);
    expect(verifySeal(r, 'job', 'q/1', JSON.parse(JSON.stringify(value)), s, Date.now())).toMatchObject({ ok: true });
    const reordered = { evidence: value.evidence, target: value.target, runbook: value.runbook };
    expect(verifySeal(r, 'job', 'q/1', reordered, s, Date.now())).toMatchObject({ ok: false, reason: 'bad-mac' });
  });
});

describe('seals', () => {
  const now = 1_800_000_000_000;
  const r = ring('receiver');
  const sealer = sealerOf(r, () => now)!;
  const s = sealer.seal('job', 'q/1', { a: 1 }, 1000);

  it('verify the value, subject and purpose they were made for, within their window', () => {
    expect(verifySeal(r, 'job', 'q/1', { a: 1 }, s, now)).toMatchObject({ ok: true });
    expect(verifySeal(r, 'job', 'q/1', { a: 2 }, s, now)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(verifySeal(r, 'job', 'q/2', { a: 1 }, s, now)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(verifySeal(r, 'control', 'q/1', { a: 1 }, s, now)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(verifySeal(r, 'job', 'q/1', { a: 1 }, { ...s, exp: s.exp + 1 }, now)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(verifySeal(r, 'job', 'q/1', { a: 1 }, s, now + 1001)).toMatchObject({ ok: false, reason: 'expired' });
    expect(verifySeal(r, 'job', 'q/1', { a: 1 }, s, now - 61_000)).toMatchObject({ ok: false, reason: 'not-yet-valid' });
  });

  it('name what is wrong with a missing, malformed or unknown-key seal', () => {
    expect(verifySeal(r, 'job', 'q/1', {}, undefined, now)).toMatchObject({ ok: false, reason: 'unsigned' });
    expect(verifySeal(r, 'job', 'q/1', {}, { v: 1, mac: 'x' }, now)).toMatchObject({ ok: false, reason: 'malformed' });
    expect(verifySeal(r, 'job', 'q/1', { a: 1 }, { ...s, kid: 'k2' }, now)).toMatchObject({
      ok: false,
      reason: 'unknown-key',
      detail: 'no key receiver.k2',
    });
    expect(verifySeal(ring('receiver'), 'job', 'q/1', { a: 1 }, s, now)).toMatchObject({ ok: false, reason: 'bad-mac' });
  });
});

describe('who may issue which work', () => {
  const job = (over: Partial<RemediationJob> & Pick<RemediationJob, 'runbook'>): RemediationJob =>
    ({ version: 1, key: 'k', evidence: [], ...over }) as RemediationJob;
  const unmap = job({ runbook: 'rbd-unmap', target: { node: 'n', pool: 'p', image: 'i', watcher: '1.2.3.4:0/1' } } as never);
  const residual = job({ runbook: 'residual-multipath-cleanup', target: { node: 'n' } } as never);
  const place = job({
    runbook: 'local-pv-placeholder',
    target: { node: 'n', pv: 'pv', path: '/dev/disk/by-id/wwn-0x1' },
    action: 'place',
  } as never);
  const detectorRelease = job({
    runbook: 'local-pv-placeholder',
    target: { node: 'n', pv: 'pv', path: '/dev/disk/by-id/wwn-0x1' },
    action: 'release',
    release: { by: 'detector', force: false },
  } as never);
  const operatorRelease = job({
    runbook: 'local-pv-placeholder',
    target: { node: 'n', pv: 'pv', path: '/dev/disk/by-id/wwn-0x1' },
    action: 'release',
    release: { by: 'operator', force: true },
  } as never);
  const stale = job({ runbook: 'rbd-stale-mapping', target: { pool: 'p', image: 'i' } } as never);
  const orphans = job({ runbook: 'orphaned-pod-volumes', target: { node: 'n' } } as never);
  const readonly = job({ runbook: 'readonly-filesystem-recovery', target: { node: 'n' } } as never);
  const taint = job({
    runbook: 'out-of-service-taint-release',
    target: { node: 'n' },
    taint: { firstSeenAt: '2026-12-07T08:00:00Z' },
  } as never);
  it.each([
    ['receiver', residual, true],
    ['receiver', place, true],
    ['receiver', operatorRelease, true],
    ['receiver', stale, true],
    ['receiver', unmap, false],
    ['cluster-worker', unmap, true],
    ['cluster-worker', residual, false],
    ['cluster-worker', stale, false],
    ['node-agent', residual, true],
    ['node-agent', detectorRelease, true],
    ['node-agent', operatorRelease, false],
    ['node-agent', place, false],
    ['node-agent', unmap, false],
    ['node-agent', stale, false],
    ['node-agent', orphans, true],
    ['node-agent', readonly, true],
    ['node-agent', taint, false],
    ['receiver', orphans, true],
    ['receiver', readonly, true],
    ['receiver', taint, true],
    ['cluster-worker', taint, false],
  ] as const)('%s issuing %#: allowed %s', (role, j, allowed) => {
    expect(issuerMayNot(role, j) === undefined).toBe(allowed);
  });
});

describe('keys and configuration', () => {
  const base = { allowUnsignedWork: false, workSealTtlSeconds: 86_400, approvalTtlSeconds: 3600 };

  it('fails closed without keys, unless ALLOW_UNSIGNED_WORK says so', () => {
    expect(() => trustFromConfig(base, 'receiver')).toThrow(ConfigError);
    expect(() => trustFromConfig(base, 'receiver')).toThrow(/SIGNING_KEYS_DIR is not set.*ALLOW_UNSIGNED_WORK=true/);
    expect(trustFromConfig({ ...base, allowUnsignedWork: true }, 'node-agent')).toMatchObject({ allowUnsigned: true });
  });

  it('wants the keys each role seals and verifies with', () => {
    const onlyReceiver = writeKeysDir(['receiver']);
    expect(trustFromConfig({ ...base, signingKeysDir: onlyReceiver }, 'receiver').sealer?.role).toBe('receiver');
    expect(() => trustFromConfig({ ...base, signingKeysDir: onlyReceiver }, 'node-agent')).toThrow(/no key of role\(s\) node-agent, cluster-worker/);
    expect(() =>
      trustFromConfig({ ...base, signingKeysDir: writeKeysDir(['receiver', 'cluster-worker', 'node-agent']), workSealTtlSeconds: 3600 }, 'receiver'),
    ).toThrow(/longer than APPROVAL_TTL_SECONDS/);
  });

  it('seals with the greatest key id of its role, or SIGNING_KEY_ID, and verifies with all', () => {
    const dir = writeKeysDir(['receiver'], '2026-11');
    writeFileSync(join(dir, 'receiver.2026-12'), randomBytes(32).toString('base64'));
    expect(keyringFor('receiver', readKeys(dir)).signing?.kid).toBe('2026-12');
    expect(keyringFor('receiver', readKeys(dir), '2026-11').signing?.kid).toBe('2026-11');
    expect(keyringFor('receiver', readKeys(dir)).verify.size).toBe(2);
    expect(() => keyringFor('receiver', readKeys(dir), '2027-01')).toThrow(/no key receiver.2027-01/);
  });

  it('refuses badly named or short keys without printing them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vm-badkeys-'));
    writeFileSync(join(dir, 'receiver.k1'), 'c2hvcnQ=');
    expect(() => readKeys(dir)).toThrow(KeyringError);
    expect(() => readKeys(dir)).not.toThrow(/c2hvcnQ/);
    const dir2 = mkdtempSync(join(tmpdir(), 'vm-badkeys-'));
    writeFileSync(join(dir2, 'admin.k1'), randomBytes(32).toString('base64'));
    expect(() => readKeys(dir2)).toThrow(/not named <role>.<key id>/);
  });
});
