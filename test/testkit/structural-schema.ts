// A CRD's openAPIV3Schema as kube-apiserver reads it, for the tests: whether it is structural
// (apiextensions.k8s.io/v1 refuses a CRD whose schema is not: every node names its `type`, an
// object's fields are `properties` or `additionalProperties`, never both, an array has `items`),
// and what a write's value breaks of it. Only the keywords our CRDs use are understood; any other
// is reported, never skipped, so a schema cannot quietly hold a rule these tests do not check.
// Where kube-apiserver prunes a field the schema does not name (and, with fieldValidation=Strict,
// refuses it), this reports it: an object we write should hold only what the schema names.

export interface Schema {
  type?: string;
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  maxLength?: number;
  minLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  default?: unknown;
  'x-kubernetes-validations'?: Array<{ rule: string; message?: string }>;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  /** Only `not: {required: [...]}` (these fields not all together), as Kyverno's CRDs use it. */
  not?: { required?: string[] };
}

const KEYWORDS = new Set([
  'type',
  'description',
  'properties',
  'additionalProperties',
  'items',
  'required',
  'enum',
  'maxLength',
  'minLength',
  'minimum',
  'maximum',
  'pattern',
  'format',
  'default',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-preserve-unknown-fields',
  'not',
]);
const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
/** RFC 3339, as the API server's date-time format takes it. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Why `schema` is not a structural schema (or uses a keyword not understood here); empty when it is. */
export function structuralProblems(schema: Schema, path = ''): string[] {
  const out: string[] = [];
  const at = path || '/';
  for (const k of Object.keys(schema)) if (!KEYWORDS.has(k)) out.push(`${at}: keyword ${k} is not understood here`);
  if ((!schema.type || !TYPES.has(schema.type)) && !schema['x-kubernetes-preserve-unknown-fields'])
    out.push(`${at}: no type (every node of a structural schema names one)`);
  if (schema.properties && schema.additionalProperties !== undefined) out.push(`${at}: properties and additionalProperties together`);
  if ((schema.properties || schema.additionalProperties !== undefined) && schema.type !== 'object') out.push(`${at}: fields on a ${schema.type}`);
  if (schema.type === 'array' && !schema.items) out.push(`${at}: an array without items`);
  for (const k of Object.keys(schema.not ?? {})) if (k !== 'required') out.push(`${at}: not.${k} is not understood here`);
  for (const r of schema.required ?? []) if (!schema.properties?.[r]) out.push(`${at}: requires ${r}, which it does not declare`);
  for (const [k, s] of Object.entries(schema.properties ?? {})) out.push(...structuralProblems(s, `${path}/${k}`));
  if (typeof schema.additionalProperties === 'object') out.push(...structuralProblems(schema.additionalProperties, `${path}/*`));
  if (schema.items) out.push(...structuralProblems(schema.items, `${path}/[]`));
  return out;
}

function typeOk(type: string | undefined, v: unknown): boolean {
  switch (type) {
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'array':
      return Array.isArray(v);
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    default:
      return true;
  }
}

function scalarErrors(s: Schema, v: unknown, at: string): string[] {
  const out: string[] = [];
  if (s.enum && !s.enum.includes(v)) out.push(`${at}: ${JSON.stringify(v)} is not one of ${s.enum.join(', ')}`);
  if (typeof v === 'string') {
    if (s.maxLength !== undefined && v.length > s.maxLength) out.push(`${at}: longer than ${s.maxLength}`);
    if (s.minLength !== undefined && v.length < s.minLength) out.push(`${at}: shorter than ${s.minLength}`);
    if (s.pattern && !new RegExp(s.pattern).test(v)) out.push(`${at}: does not match ${s.pattern}`);
    if (s.format === 'date-time' && !DATE_TIME.test(v)) out.push(`${at}: not an RFC 3339 date-time`);
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) out.push(`${at}: less than ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) out.push(`${at}: more than ${s.maximum}`);
  }
  return out;
}

/** What `value` breaks of `schema` (CEL rules aside: the caller checks those it relies on); empty when valid. */
export function schemaErrors(schema: Schema, value: unknown, path = ''): string[] {
  const at = path || '/';
  if (!typeOk(schema.type, value)) return [`${at}: expected ${schema.type}, got ${Array.isArray(value) ? 'array' : typeof value}`];
  const out = scalarErrors(schema, value, at);
  if (schema.type === 'object') {
    const o = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (o[r] === undefined) out.push(`${path}/${r}: required`);
    const together = schema.not?.required;
    if (together && together.every((r) => o[r] !== undefined)) out.push(`${at}: ${together.join(' and ')} may not be given together`);
    for (const [k, v] of Object.entries(o)) {
      const s = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      // The root's metadata is the API server's to check (ObjectMeta), whatever the schema says of it.
      if (s) out.push(...(path === '' && k === 'metadata' ? [] : schemaErrors(s, v, `${path}/${k}`)));
      // The API server keeps apiVersion, kind and metadata whether the CRD's schema names them or not.
      else if (path === '' && ['apiVersion', 'kind', 'metadata'].includes(k)) continue;
      else if (schema.additionalProperties !== true && !schema['x-kubernetes-preserve-unknown-fields'])
        out.push(`${path}/${k}: not in the schema (the API server would prune it)`);
    }
  }
  if (schema.type === 'array' && schema.items) {
    const items = value as unknown[];
    for (const [i, v] of items.entries()) out.push(...schemaErrors(schema.items, v, `${path}/${i}`));
    const keys = schema['x-kubernetes-list-map-keys'];
    if (schema['x-kubernetes-list-type'] === 'map' && keys) {
      const seen = new Set(items.map((v) => JSON.stringify(keys.map((k) => (v as Record<string, unknown>)[k]))));
      if (seen.size !== items.length) out.push(`${at}: duplicate entries for keys ${keys.join(', ')}`);
    }
  }
  return out;
}
