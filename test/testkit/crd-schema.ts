import type { FieldError, WriteValidator } from './fake-kube-validation.ts';
import { schemaErrors, type Schema } from './structural-schema.ts';

// A CustomResourceDefinition's openAPIV3Schema applied to every write of its objects
// (FakeKubeApi.validate), as kube-apiserver's structural schema validation does: the checks are
// structural-schema.ts's, which reports a keyword it does not understand instead of skipping it,
// and a field the API server would prune.

type Obj = Record<string, unknown>;

/** A write validator from a CRD object: the served version's schema. */
export function crdValidator(crd: Obj, version = 'v1alpha1'): WriteValidator {
  const versions = ((crd['spec'] as Obj)['versions'] as Obj[]).filter((v) => v['name'] === version);
  const schema = (versions[0]?.['schema'] as Obj | undefined)?.['openAPIV3Schema'] as Schema | undefined;
  if (!schema) throw new Error(`crd-schema: no openAPIV3Schema for ${version}`);
  return (next) =>
    schemaErrors(schema, next).map(
      (e): FieldError => ({
        // As the API server names a field: `status.conditions[0].reason`.
        field: e
          .slice(1, e.indexOf(':'))
          .replace(/\/(\d+)(?=\/|$)/g, '[$1]')
          .replaceAll('/', '.'),
        reason: /: required$/.test(e) ? 'FieldValueRequired' : 'FieldValueInvalid',
        message: e.slice(e.indexOf(':') + 2),
      }),
    );
}
