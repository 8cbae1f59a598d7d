import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR, helmTemplate } from '../../../../scripts/deploy/chart.ts';
import { loadPublicKey } from '../../../../scripts/supply-chain/cosign-key.ts';
import { ClusterPolicy } from '@kubernetes-models/kyverno/kyverno.io/v1/ClusterPolicy';
import { CLUSTER_IMAGE_POLICY_CRD } from '../../../testkit/cluster-image-policy-schema.ts';
import { crdValidator } from '../../../testkit/crd-schema.ts';
import { structuralProblems, type Schema } from '../../../testkit/structural-schema.ts';
import { podSpec, rendered } from '../../../support/manifests.ts';

// imageVerification renders Kyverno's verifyImages ClusterPolicy and Sigstore policy-controller's
// ClusterImagePolicy: the first passes Kyverno's models (@kubernetes-models/kyverno: types, enums,
// required fields), the second the schema written from policy-controller's documentation
// (test/testkit/cluster-image-policy-schema.ts, which refuses unknown fields), and both name the release key (deploy/keys/cosign.pub) and the repository the
// chart's pods actually run, through a mirror too.

type Obj = Record<string, any>;
const POLICY_CONTROLLER = CLUSTER_IMAGE_POLICY_CRD as Obj;
/** What Kyverno's models say of a ClusterPolicy, as `<path> <message>`; empty when valid. */
const kyvernoErrors = (o: Obj): string[] => {
  try {
    new ClusterPolicy(o as never).validate();
    return [];
  } catch (err) {
    const errors = (err as { errors?: { instancePath: string; message?: string }[] }).errors;
    return errors ? errors.map((e) => `${e.instancePath} ${e.message ?? 'invalid'}`) : [(err as Error).message];
  }
};
const RELEASE_KEY = readFileSync(join(CHART_DIR, '../../keys/cosign.pub'), 'utf8');

const ON = rendered('image-verification');
const policyOf = (objects: readonly Obj[], kind: string) => objects.find((o) => o['kind'] === kind);
const kyverno = () => policyOf(ON, 'ClusterPolicy')!;
const cip = () => policyOf(ON, 'ClusterImagePolicy')!;
const ourImages = (objects: readonly Obj[]) =>
  objects.flatMap((o) => (podSpec(o as never)?.containers ?? []).map((c) => c.image!)).filter((i) => !/redis/.test(i));

describe('imageVerification in the chart', () => {
  it('renders neither policy by default', () => {
    const off = rendered('defaults');
    expect(policyOf(off, 'ClusterPolicy')).toBeUndefined();
    expect(policyOf(off, 'ClusterImagePolicy')).toBeUndefined();
  });

  it("defaults to the repository's release key, a P-256 public key", () => {
    const values = parseYaml(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as { imageVerification: { publicKey: string } };
    expect(values.imageVerification.publicKey).toBe(RELEASE_KEY);
    expect(loadPublicKey(RELEASE_KEY).asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
  });

  it("passes Kyverno's ClusterPolicy models and policy-controller's ClusterImagePolicy schema", () => {
    expect(structuralProblems(POLICY_CONTROLLER['spec'].versions[0].schema.openAPIV3Schema as Schema)).toEqual([]);
    expect(kyverno()['apiVersion']).toBe('kyverno.io/v1');
    expect(cip()['apiVersion']).toBe('policy.sigstore.dev/v1beta1');
    expect(kyvernoErrors(kyverno())).toEqual([]);
    expect(crdValidator(POLICY_CONTROLLER, 'v1beta1')(cip(), undefined)).toEqual([]);
  });

  it('the schemas refuse near misses: a failure action or a type Kyverno does not know, a misspelt key field for policy-controller', () => {
    const k = structuredClone(kyverno());
    k['spec'].rules[0].verifyImages[0].failureAction = 'Deny';
    k['spec'].rules[0].verifyImages[0].required = 'yes';
    expect(
      kyvernoErrors(k)
        .map((e) => e.split(' ')[0])
        .sort(),
    ).toEqual(['/spec/rules/0/verifyImages/0/failureAction', '/spec/rules/0/verifyImages/0/required']);
    const c = structuredClone(cip());
    c['spec'].authorities[0].key.pem = RELEASE_KEY;
    c['spec'].authorities[0].key.hashAlgorithm = 'md5';
    expect(
      crdValidator(POLICY_CONTROLLER, 'v1beta1')(c, undefined)
        .map((e) => e.field)
        .sort(),
    ).toEqual(['spec.authorities[0].key.hashAlgorithm', 'spec.authorities[0].key.pem']);
  });

  it('both name the same key, the release key, and the same repository: the one every volume-medic pod runs (global.imageRegistry applied)', () => {
    const kRule = kyverno()['spec'].rules[0];
    const verify = kRule.verifyImages[0];
    expect(verify.attestors[0].entries[0].keys.publicKeys).toBe(RELEASE_KEY);
    expect(cip()['spec'].authorities.map((a: Obj) => a['key'].data)).toEqual([RELEASE_KEY]);
    expect(verify.imageReferences).toEqual([cip()['spec'].images[0].glob]);
    expect(verify).toMatchObject({ failureAction: 'Enforce', required: true, verifyDigest: true });
    expect(kRule.match.any[0].resources).toEqual({ kinds: ['Pod'], namespaces: ['volume-medic'] });
    const prefix = (verify.imageReferences[0] as string).replace(/\*$/, '');
    expect(prefix).toBe('registry.example.com/volume-medic/volume-medic');
    const images = ourImages(ON);
    expect(images.length).toBeGreaterThan(3);
    for (const i of images) expect(i).toMatch(new RegExp(`^${prefix.replace(/[.]/g, '\\.')}[:@]`));
  });

  it('follows image.repository and image.digest', () => {
    const objects = helmTemplate({
      set: [
        'imageVerification.kyverno.enabled=true',
        'imageVerification.policyController.enabled=true',
        'image.repository=quay.io/acme/vm',
        `image.digest=sha256:${'ab'.repeat(32)}`,
      ],
    });
    expect(policyOf(objects, 'ClusterPolicy')!['spec'].rules[0].verifyImages[0].imageReferences).toEqual(['quay.io/acme/vm*']);
    expect(policyOf(objects, 'ClusterImagePolicy')!['spec'].images).toEqual([{ glob: 'quay.io/acme/vm*' }]);
    for (const i of ourImages(objects)) expect(i).toBe(`quay.io/acme/vm@sha256:${'ab'.repeat(32)}`);
  });

  it('the values schema refuses a key that is not a PEM public key and an unknown failure action', () => {
    expect(() => helmTemplate({ set: ['imageVerification.kyverno.enabled=true', 'imageVerification.publicKey=not-a-key'] })).toThrow(/publicKey/);
    expect(() => helmTemplate({ set: ['imageVerification.kyverno.failureAction=Deny'] })).toThrow(/failureAction/);
  });
});
