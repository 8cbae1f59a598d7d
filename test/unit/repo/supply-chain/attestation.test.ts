import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openEnvelope, signEnvelope } from '../../../../scripts/supply-chain/dsse.ts';
import { simpleSigningPayload, repositoryOf } from '../../../../scripts/supply-chain/cosign-signature.ts';
import { slsaProvenance } from '../../../../scripts/supply-chain/provenance.ts';
import { evaluate, Policy, sigstorePolicy } from '../../../../scripts/supply-chain/policy.ts';

// The pieces of a signed release that need no registry: DSSE envelopes, the SLSA statement's
// shape, cosign's simple-signing payload, and which policy.json scope applies.

const pair = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const DIGEST = `sha256:${'c9'.repeat(32)}`;

describe('DSSE', () => {
  it('opens with the signing key only, and not once the payload or its type changed', () => {
    const a = pair();
    const env = signEnvelope({ hello: 'world' }, a.privateKey);
    expect(env.payloadType).toBe('application/vnd.in-toto+json');
    expect(openEnvelope(env, a.publicKey)).toEqual({ hello: 'world' });
    expect(openEnvelope(env, pair().publicKey)).toBeUndefined();
    expect(openEnvelope({ ...env, payload: Buffer.from('{"hello":"there"}').toString('base64') }, a.publicKey)).toBeUndefined();
    expect(openEnvelope({ ...env, payloadType: 'text/plain' }, a.publicKey)).toBeUndefined();
  });
});

describe('SLSA v1 provenance', () => {
  it('names the subject digest, the commit, the command, the builder and the inputs', () => {
    const s = slsaProvenance({
      subject: { name: 'r.example/ns/volume-medic', digest: DIGEST },
      buildType: 'https://example/build@v1',
      source: 'https://github.com/volume-medic/volume-medic',
      revision: 'abc123',
      buildCommand: ['npm', 'run', 'image'],
      builderId: 'https://example/builder',
      dependencies: [{ name: 'package-lock.json', digest: { sha256: 'ff' } }],
    });
    expect(s).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'r.example/ns/volume-medic', digest: { sha256: 'c9'.repeat(32) } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: {
        buildDefinition: {
          externalParameters: { command: ['npm', 'run', 'image'], source: { revision: 'abc123' } },
          resolvedDependencies: [
            { uri: 'git+https://github.com/volume-medic/volume-medic', digest: { gitCommit: 'abc123' } },
            { name: 'package-lock.json', digest: { sha256: 'ff' } },
          ],
        },
        runDetails: { builder: { id: 'https://example/builder' } },
      },
    });
  });
});

describe('cosign simple signing and policy.json', () => {
  it("signs cosign's payload: the digest, the repository, the signature type", () => {
    expect(JSON.parse(simpleSigningPayload('r.example:5000/ns/vm', DIGEST).toString())).toEqual({
      critical: {
        identity: { 'docker-reference': 'r.example:5000/ns/vm' },
        image: { 'docker-manifest-digest': DIGEST },
        type: 'cosign container image signature',
      },
      optional: null,
    });
    expect(repositoryOf('r.example:5000/ns/vm:0.1.0')).toBe('r.example:5000/ns/vm');
    expect(repositoryOf(`r.example:5000/ns/vm@${DIGEST}`)).toBe('r.example:5000/ns/vm');
  });

  it('rejects what no scope covers without asking the registry, and refuses requirement types it does not know', async () => {
    const p = sigstorePolicy('r.example/ns', { keyPath: '/nonexistent' });
    expect(await evaluate(p, { host: 'other.example', repo: 'ns/vm' }, DIGEST)).toEqual({ accepted: false, reasons: ['the policy rejects this scope'] });
    expect(await evaluate(p, { host: 'r.example', repo: 'elsewhere/vm' }, DIGEST)).toMatchObject({ accepted: false });
    expect(Policy.safeParse({ default: [{ type: 'signedBy', keyType: 'GPGKeys' }] }).success).toBe(false);
    expect(await evaluate({ default: [{ type: 'insecureAcceptAnything' }] }, { host: 'x', repo: 'y' }, DIGEST)).toEqual({ accepted: true, reasons: [] });
  });
});
