import type { FieldError, WriteValidator } from './fake-kube-validation.ts';

// A CustomResourceDefinition's openAPIV3Schema applied to a write, as kube-apiserver's structural
// schema validation does, for the keywords volume-medic's CRDs use (type, properties, required,
// items, enum, pattern, min/maxLength, minimum, format date-time/int64, x-kubernetes-* list and
// preserve markers, default, description). A keyword outside that set throws: a schema this cannot
// check fails the test instead of passing unchecked. Unknown fields are pruned by the real server
// (no error); here they are reported, so a write that would lose data is seen.

type Schema = Record<string, unknown>;
type Obj = Record<string, unknown>;

const KNOWN = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'format',
  'default',
  'description',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-preserve-unknown-fields',
]);
const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

const typeOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v;

function check(value: unknown, s: Schema, path: string, out: FieldError[]): void {
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new Error(`crd-schema: keyword ${k} at ${path || '/'} is not checked here`);
  const bad = (message: string): void => {
    out.push({ field: path, reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${message}` });
  };
  const want = s['type'] as string | undefined;
  const got = typeOf(value);
  if (want && got !== want && !(want === 'number' && got === 'integer')) {
    bad(`must be of type ${want}`);
    return;
  }
  if (s['enum'] && !(s['enum'] as unknown[]).includes(value)) {
    bad(`supported values: ${(s['enum'] as unknown[]).join(', ')}`);
    return;
  }
  if (typeof value === 'string') {
    if (s['pattern'] && !new RegExp(s['pattern'] as string).test(value)) bad(`should match '${s['pattern'] as string}'`);
    if (typeof s['maxLength'] === 'number' && value.length > s['maxLength']) bad(`must have at most ${s['maxLength']} characters`);
    if (typeof s['minLength'] === 'number' && value.length < s['minLength']) bad(`must have at least ${s['minLength']} characters`);
    if (s['format'] === 'date-time' && !DATE_TIME.test(value)) bad('must be a date-time');
  }
  if (typeof value === 'number' && typeof s['minimum'] === 'number' && value < s['minimum']) bad(`must be at least ${s['minimum']}`);
  if (Array.isArray(value) && s['items']) {
    for (const [i, v] of value.entries()) check(v, s['items'] as Schema, `${path}[${i}]`, out);
    const keys = s['x-kubernetes-list-map-keys'] as string[] | undefined;
    if (s['x-kubernetes-list-type'] === 'map' && keys) {
      const seen = new Set(value.map((v) => JSON.stringify(keys.map((k) => (v as Obj)[k]))));
      if (seen.size !== value.length) bad(`duplicate entries for keys ${keys.join(', ')}`);
    }
  }
  if (got === 'object' && (s['properties'] || s['required'])) checkObject(value as Obj, s, path, out);
}

function checkObject(value: Obj, s: Schema, path: string, out: FieldError[]): void {
  const props = (s['properties'] ?? {}) as Record<string, Schema>;
  for (const r of (s['required'] ?? []) as string[]) {
    if (value[r] === undefined) out.push({ field: path ? `${path}.${r}` : r, reason: 'FieldValueRequired', message: 'Required value' });
  }
  for (const [k, v] of Object.entries(value)) {
    const field = path ? `${path}.${k}` : k;
    const sub = props[k];
    if (sub) check(v, sub, field, out);
    else if (!s['x-kubernetes-preserve-unknown-fields'])
      out.push({ field, reason: 'FieldValueInvalid', message: 'unknown field (the API server would prune it)' });
  }
}

/** A write validator (FakeKubeApi.validate) from a CRD object: the served version's schema. */
export function crdValidator(crd: Obj, version = 'v1alpha1'): WriteValidator {
  const versions = ((crd['spec'] as Obj)['versions'] as Obj[]).filter((v) => v['name'] === version);
  const schema = (versions[0]?.['schema'] as Obj | undefined)?.['openAPIV3Schema'] as Schema | undefined;
  if (!schema) throw new Error(`crd-schema: no openAPIV3Schema for ${version}`);
  return (next) => {
    const out: FieldError[] = [];
    // metadata is the API server's own (ObjectMeta); the CRD's schema says `type: object` only.
    check({ ...next, metadata: {} }, schema, '', out);
    return out;
  };
}
