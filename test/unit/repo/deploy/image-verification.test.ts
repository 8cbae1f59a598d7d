import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR, helmTemplate } from '../../../../scripts/deploy/chart.ts';
import { loadPublicKey } from '../../../../scripts/supply-chain/cosign-key.ts';
import { crdValidator } from '../../../testkit/crd-schema.ts';
import { structuralProblems, type Schema } from '../../../testkit/structural-schema.ts';
import { podSpec, rendered } from '../../../support/manifests.ts';

// imageVerification renders Kyverno's verifyImages ClusterPolicy and Sigstore policy-controller's
// ClusterImagePolicy: each passes its controller's own CRD schema (test/fixtures/crds, see the
// README there), and both name the release key (deploy/keys/cosign.pub) and the repository the
// chart's pods actually run, through a mirror too.

type Obj = Record<string, any>;
const FIXTURES = join(import.meta.dirname, '../../../fixtures/crds');
const crd = (file: string): Obj => JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as Obj;
const KYVERNO = crd('kyverno.io_clusterpolicies.v1.json');
const POLICY_CONTROLLER = crd('policy.sigstore.dev_clusterimagepolicies.v1beta1.json');
const RELEASE_KEY = readFileSync(join(CHART_DIR, '../../keys/cosign.pub'), 'utf8');

const ON = rendered('image-verification');
const policyOf = (objects: readonly Obj[], kind: string) => objects.find((o) => o['kind'] === kind);
const kyverno = () => policyOf(ON, 'ClusterPolicy')!;
const cip = () => policyOf(ON, 'ClusterImagePolicy')!;
const ourImages = (objects: readonly Obj[]) =>
  objects.flatMap((o) => (podSpec(o as never)?.containers ?? []).map((c) => c.image!)).filter((i) => !/redis/.test(i));

/** Every field path of an object as structuralProblems names schema nodes: /a/b, /list/[]/c. */
const fieldPaths = (v: unknown, path = ''): string[] =>
  Array.isArray(v)
    ? v.flatMap((x) => fieldPaths(x, `${path}/[]`))
    : v !== null && typeof v === 'object'
      ? Object.entries(v).flatMap(([k, x]) => fieldPaths(x, `${path}/${k}`))
      : [path];

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

  it("passes Kyverno's ClusterPolicy schema and policy-controller's ClusterImagePolicy schema", () => {
    const problems = (c: Obj) => structuralProblems(c['spec'].versions[0].schema.openAPIV3Schema as Schema);
    expect(problems(POLICY_CONTROLLER)).toEqual([]);
    // Kyverno's schema uses two keywords the validator does not check (oneOf, x-kubernetes-map-type);
    // none of them sits on or under a field the rendered policy sets, so nothing goes unchecked.
    const unchecked = problems(KYVERNO);
    expect(new Set(unchecked.map((p) => p.replace(/^.*: keyword (\S+) .*$/, '$1')))).toEqual(new Set(['oneOf', 'x-kubernetes-map-type']));
    const used = fieldPaths(kyverno());
    for (const p of unchecked.map((x) => x.slice(0, x.indexOf(':'))))
      expect(
        used.filter((u) => u.startsWith(p) || p.startsWith(`${u}/`)),
        p,
      ).toEqual([]);
    expect(kyverno()['apiVersion']).toBe(`${KYVERNO['spec'].group}/v1`);
    expect(cip()['apiVersion']).toBe(`${POLICY_CONTROLLER['spec'].group}/v1beta1`);
    expect(crdValidator(KYVERNO, 'v1')(kyverno(), undefined)).toEqual([]);
    expect(crdValidator(POLICY_CONTROLLER, 'v1beta1')(cip(), undefined)).toEqual([]);
  });

  it('the schemas refuse near misses: a misspelt field, a failure action Kyverno does not know, match with any and all', () => {
    const k = structuredClone(kyverno());
    k['spec'].rules[0].verifyImages[0].failureAction = 'Deny';
    k['spec'].rules[0].verifyImages[0].attestors[0].entries[0].keys.publicKey = RELEASE_KEY;
    k['spec'].rules[0].match.all = k['spec'].rules[0].match.any;
    expect(
      crdValidator(KYVERNO, 'v1')(k, undefined)
        .map((e) => e.field)
        .sort(),
    ).toEqual(['spec.rules[0].match', 'spec.rules[0].verifyImages[0].attestors[0].entries[0].keys.publicKey', 'spec.rules[0].verifyImages[0].failureAction']);
    const c = structuredClone(cip());
    c['spec'].authorities[0].key.pem = RELEASE_KEY;
    expect(crdValidator(POLICY_CONTROLLER, 'v1beta1')(c, undefined).map((e) => e.field)).toEqual(['spec.authorities[0].key.pem']);
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
