import * as k8s from '@kubernetes/client-node';
import type { KObject } from '../../scripts/deploy/chart.ts';
import { CLUSTER_IMAGE_POLICY_CRD } from './cluster-image-policy-schema.ts';
import { crdValidator } from './crd-schema.ts';

// Validates Kubernetes objects offline, two ways:
// 1. against the OpenAPI-derived JSON schemas of a current Kubernetes release, compiled by the
//    `kubernetes-models` package (and `@kubernetes-models/prometheus-operator` for the
//    monitoring.coreos.com CRDs): types, required fields, formats, enums;
// 2. strictly, like `kubectl apply --validate=strict`: every field must exist in the API type.
//    The upstream schemas allow unknown fields, so this walks the typed model of
//    `@kubernetes/client-node` (generated from the same OpenAPI) to find typos.
// Kyverno's custom resources come from `@kubernetes-models/kyverno`; Sigstore policy-controller's
// ClusterImagePolicy, which no models package carries, against the schema written from its
// documentation in ./cluster-image-policy-schema.ts.
// An object whose kind has no schema here is an error, never skipped.

interface ValidationError {
  instancePath?: string;
  message?: string;
}

type ModelClass = new (data: unknown) => { validate(): void };

const CRD_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'kyverno.io': '@kubernetes-models/kyverno',
};

/** apiVersion/kind -> [the CRD, its version] for kinds no models package has. */
const WRITTEN_CRDS: Record<string, [Record<string, unknown>, string]> = {
  'policy.sigstore.dev/v1beta1/ClusterImagePolicy': [CLUSTER_IMAGE_POLICY_CRD, 'v1beta1'],
};
const written = (o: KObject) => WRITTEN_CRDS[`${o.apiVersion}/${o.kind}`];

function writtenErrors(o: KObject, [crd, version]: [Record<string, unknown>, string]): string[] {
  return crdValidator(crd, version)(o, undefined).map((e) => `${e.field} ${e.message}`);
}

async function modelOf(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/') as [string, string]) : ['', apiVersion];
  const spec =
    group === ''
      ? `kubernetes-models/${version}/${kind}`
      : CRD_PACKAGES[group]
        ? `${CRD_PACKAGES[group]}/${group}/${version}/${kind}`
        : `kubernetes-models/${group}/${version}/${kind}`;
  try {
    const mod = (await import(spec)) as Record<string, unknown>;
    return mod[kind] as ModelClass | undefined;
  } catch {
    return undefined;
  }
}

/** Schema errors of one object, as `<path> <message>` strings; empty when valid. */
async function schemaErrors(o: KObject): Promise<string[]> {
  const crd = written(o);
  if (crd) return writtenErrors(o, crd);
  const Model = await modelOf(o.apiVersion, o.kind);
  if (!Model) return [`no schema for ${o.apiVersion} ${o.kind}`];
  try {
    new Model(o).validate();
    return [];
  } catch (err) {
    const errors = (err as { errors?: ValidationError[] }).errors;
    if (!errors) return [(err as Error).message];
    return errors.map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`);
  }
}

interface Attribute {
  name: string;
  baseName: string;
  type: string;
}
type Typed = { getAttributeTypeMap(): Attribute[] };

const models = k8s as unknown as Record<string, Typed | undefined>;
const SCALARS = new Set(['string', 'number', 'boolean', 'Date', 'any', 'object', 'IntOrString', 'V1MicroTime']);

function checkFields(value: unknown, type: string, path: string, out: string[]): void {
  if (value === null || value === undefined || SCALARS.has(type)) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) for (const [i, v] of value.entries()) checkFields(v, array[1] as string, `${path}/${i}`, out);
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object') for (const [k, v] of Object.entries(value)) checkFields(v, map[1] as string, `${path}/${k}`, out);
    return;
  }
  const model = models[type];
  if (!model || typeof model.getAttributeTypeMap !== 'function') {
    out.push(`${path || '/'}: no client-node model ${type} to check fields against`);
    return;
  }
  if (typeof value !== 'object' || Array.isArray(value)) return; // the schema check reports wrong types
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [key, v] of Object.entries(value)) {
    const t = attributes.get(key);
    if (t === undefined) out.push(`${path}/${key}: unknown field in ${type}`);
    else checkFields(v, t, `${path}/${key}`, out);
  }
}

/** Unknown fields of a built-in object (custom resources return [] : their CRD schema decides). */
function unknownFields(o: KObject): string[] {
  const [group, version] = o.apiVersion.includes('/') ? (o.apiVersion.split('/') as [string, string]) : ['', o.apiVersion];
  if (CRD_PACKAGES[group] || written(o)) return [];
  // client-node prefixes a model's name with its group where two groups have the kind (CoreV1Event, EventsV1Event).
  const cap = (w: string): string => `${w.charAt(0).toUpperCase()}${w.slice(1)}`;
  const plain = `${cap(version)}${o.kind}`;
  const prefixed = `${cap(group === '' ? 'core' : (group.split('.')[0] ?? ''))}${plain}`;
  const type = typeof models[prefixed]?.getAttributeTypeMap === 'function' ? prefixed : plain;
  const out: string[] = [];
  checkFields(o, type, '', out);
  return out;
}

/** Every problem of every object, prefixed with its identity; empty when all are valid. */
export async function validateAll(objects: readonly KObject[]): Promise<string[]> {
  const out: string[] = [];
  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.name}`;
    for (const e of [...(await schemaErrors(o)), ...unknownFields(o)]) out.push(`${id}: ${e}`);
  }
  return out;
}
