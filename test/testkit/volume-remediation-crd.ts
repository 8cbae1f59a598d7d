import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { RENDERED_FILE } from '../../scripts/deploy/chart.ts';
import type { FieldError, WriteValidator } from './fake-kube-validation.ts';
import { schemaErrors, type Schema } from './structural-schema.ts';

// The VolumeRemediation CRD as the chart installs it (deploy/volume-medic.yaml: the chart
// rendered, kept fresh by test/unit/repo/deploy/chart.test.ts), and a write validator for the fake
// API server that holds every write to the collection to its openAPIV3Schema and its one CEL rule
// (the spec does not change), as kube-apiserver does.

export const RECORDS_COLLECTION = 'apis/volume-medic.io/v1alpha1/volumeremediations';

type Obj = Record<string, any>;

/** The CRD object of the rendered chart. */
export function volumeRemediationCrd(): Obj {
  const docs = parseAllDocuments(readFileSync(RENDERED_FILE, 'utf8')).map((d) => d.toJS() as Obj | null);
  const crd = docs.find((d) => d?.['kind'] === 'CustomResourceDefinition' && d['metadata']?.name === 'volumeremediations.volume-medic.io');
  if (!crd) throw new Error(`${RENDERED_FILE} has no CustomResourceDefinition volumeremediations.volume-medic.io`);
  return crd;
}

/** The served version's schema. */
export function volumeRemediationSchema(crd: Obj = volumeRemediationCrd()): Schema {
  return crd['spec'].versions.find((v: Obj) => v['name'] === 'v1alpha1').schema.openAPIV3Schema as Schema;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Every write to the collection checked against the chart's schema; the answers the test saw, for assertions. */
export function volumeRemediationValidator(seen: string[][] = []): WriteValidator {
  const schema = volumeRemediationSchema();
  const rules = JSON.stringify(schema.properties?.['spec']?.['x-kubernetes-validations'] ?? []);
  if (!rules.includes('self == oldSelf')) throw new Error('the CRD no longer holds its spec immutable: this validator checks that rule');
  return (next, old) => {
    const errors: FieldError[] = schemaErrors(schema, next).map((e) => ({
      field: e.split(':')[0]!.slice(1).replaceAll('/', '.'),
      reason: 'FieldValueInvalid',
      message: e,
    }));
    const name = String(next['metadata']?.name ?? '');
    if (!DNS_SUBDOMAIN.test(name) || name.length > 253)
      errors.push({ field: 'metadata.name', reason: 'FieldValueInvalid', message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain` });
    if (old && !isDeepStrictEqual(old['spec'], next['spec']))
      errors.push({ field: 'spec', reason: 'FieldValueInvalid', message: 'Invalid value: "object": the spec is the job\'s identity and does not change' });
    seen.push(errors.map((e) => e.message));
    return errors;
  };
}
