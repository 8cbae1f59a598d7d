import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseAllDocuments, parse as parseYaml, stringify } from 'yaml';

// A small, strict kustomize: the subset deploy/ uses (resources, components, images, JSON6902
// patches), so the manifests render and are validated on machines without kubectl. Anything
// outside that subset is an error, never ignored: the in-repo render and `kubectl kustomize`
// must not drift apart (test/unit/deploy/render.test.ts compares them when kubectl is present).

export type KObject = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } & Record<string, unknown> };

export class KustomizeError extends Error {
  override name = 'KustomizeError';
}

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'components', 'images', 'patches']);

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

interface PatchRule {
  target?: { group?: string; version?: string; kind?: string; name?: string; namespace?: string };
  patch?: string;
  path?: string;
}

interface JsonPatchOp {
  op: string;
  path: string;
  value?: unknown;
}

function kustomizationFile(dir: string): string {
  for (const f of KUSTOMIZATION_FILES) {
    const p = join(dir, f);
    if (existsSync(p)) return p;
  }
  throw new KustomizeError(`${dir}: no kustomization.yaml`);
}

/** Every YAML document of a file, skipping empty ones; each must be a Kubernetes object. */
export function readObjects(file: string): KObject[] {
  const out: KObject[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    if (doc.errors.length > 0) throw new KustomizeError(`${file}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isObject(value) || typeof value['apiVersion'] !== 'string' || typeof value['kind'] !== 'string'
      || !isObject(value['metadata']) || typeof value['metadata']['name'] !== 'string') {
      throw new KustomizeError(`${file}: a document without apiVersion, kind and metadata.name`);
    }
    out.push(value as KObject);
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export const idOf = (o: KObject): string => `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** Render the kustomization in `dir` (a Kustomization or a Component) into its objects. */
export function renderKustomization(dir: string): KObject[] {
  return build(resolve(dir), 'Kustomization', []);
}

function build(dir: string, expect: 'Kustomization' | 'Component', inherited: KObject[]): KObject[] {
  const file = kustomizationFile(dir);
  const k = parseYaml(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const unsupported = Object.keys(k).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length > 0) throw new KustomizeError(`${file}: field(s) ${unsupported.join(', ')} are outside the subset scripts/deploy/kustomize.ts renders`);
  const kind = (k['kind'] as string | undefined) ?? 'Kustomization';
  if (kind !== expect) throw new KustomizeError(`${file}: kind ${kind} where a ${expect} was expected`);

  let objects: KObject[] = [...inherited];
  for (const r of asList<string>(k['resources'], file, 'resources')) {
    const p = resolve(dir, r);
    const added = statSync(p).isDirectory() ? build(p, 'Kustomization', []) : readObjects(p);
    objects = addAll(objects, added, file);
  }
  for (const c of asList<string>(k['components'], file, 'components')) {
    objects = build(resolve(dir, c), 'Component', objects);
  }
  for (const rule of asList<PatchRule>(k['patches'], file, 'patches')) {
    objects = applyPatch(objects, rule, dir, file);
  }
  for (const rule of asList<ImageRule>(k['images'], file, 'images')) {
    for (const o of objects) setImages(o, rule);
  }
  return objects;
}

function asList<T>(v: unknown, file: string, field: string): T[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new KustomizeError(`${file}: ${field} must be a list`);
  return v as T[];
}

function addAll(into: KObject[], added: KObject[], file: string): KObject[] {
  const seen = new Set(into.map(idOf));
  for (const o of added) {
    if (seen.has(idOf(o))) throw new KustomizeError(`${file}: ${idOf(o)} is defined twice`);
    seen.add(idOf(o));
  }
  return [...into, ...added];
}

function groupVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

function applyPatch(objects: KObject[], rule: PatchRule, dir: string, file: string): KObject[] {
  const t = rule.target;
  if (!t) throw new KustomizeError(`${file}: a patch without a target (strategic-merge patches are outside the subset)`);
  const extra = Object.keys(t).filter((key) => !['group', 'version', 'kind', 'name', 'namespace'].includes(key));
  if (extra.length > 0) throw new KustomizeError(`${file}: patch target field(s) ${extra.join(', ')} are outside the subset`);
  const text = rule.patch ?? (rule.path ? readFileSync(resolve(dir, rule.path), 'utf8') : undefined);
  if (text === undefined) throw new KustomizeError(`${file}: a patch needs patch or path`);
  const ops = parseYaml(text) as unknown;
  if (!Array.isArray(ops)) throw new KustomizeError(`${file}: only JSON6902 patches (a list of operations) are in the subset`);
  const matches = objects.filter((o) => {
    const gv = groupVersion(o.apiVersion);
    return (t.kind === undefined || t.kind === o.kind) && (t.name === undefined || t.name === o.metadata.name)
      && (t.group === undefined || t.group === gv.group) && (t.version === undefined || t.version === gv.version)
      && (t.namespace === undefined || t.namespace === o.metadata.namespace);
  });
  if (matches.length === 0) throw new KustomizeError(`${file}: patch target ${JSON.stringify(t)} matches nothing`);
  return objects.map((o) => (matches.includes(o) ? jsonPatch(o, ops as JsonPatchOp[], file) : o));
}

function unescape(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function jsonPatch<T>(doc: T, ops: JsonPatchOp[], file: string): T {
  const root = structuredClone(doc) as unknown;
  for (const op of ops) {
    if (!['add', 'replace', 'remove'].includes(op.op)) throw new KustomizeError(`${file}: JSON6902 op ${op.op} is outside the subset`);
    const tokens = op.path.split('/').slice(1).map(unescape);
    const last = tokens.pop();
    if (last === undefined) throw new KustomizeError(`${file}: patch path ${op.path} names the whole object`);
    let parent: unknown = root;
    for (const tok of tokens) {
      parent = Array.isArray(parent) ? parent[Number(tok)] : isObject(parent) ? parent[tok] : undefined;
      if (parent === undefined) throw new KustomizeError(`${file}: patch path ${op.path} does not exist`);
    }
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      if (!Number.isInteger(index) || index < 0 || index > parent.length) throw new KustomizeError(`${file}: bad array index in ${op.path}`);
      if (op.op === 'add') parent.splice(index, 0, structuredClone(op.value));
      else if (index >= parent.length) throw new KustomizeError(`${file}: patch path ${op.path} does not exist`);
      else if (op.op === 'replace') parent[index] = structuredClone(op.value);
      else parent.splice(index, 1);
    } else if (isObject(parent)) {
      if (op.op !== 'add' && !(last in parent)) throw new KustomizeError(`${file}: patch path ${op.path} does not exist`);
      if (op.op === 'remove') delete parent[last];
      else parent[last] = structuredClone(op.value);
    } else {
      throw new KustomizeError(`${file}: patch path ${op.path} does not exist`);
    }
  }
  return root as T;
}

function imageName(image: string): string {
  const at = image.indexOf('@');
  const noDigest = at < 0 ? image : image.slice(0, at);
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

function setImages(node: unknown, rule: ImageRule): void {
  if (Array.isArray(node)) {
    for (const n of node) setImages(n, rule);
    return;
  }
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'containers' || key === 'initContainers') && Array.isArray(value)) {
      for (const c of value) {
        if (!isObject(c) || typeof c['image'] !== 'string' || imageName(c['image']) !== rule.name) continue;
        const old = c['image'];
        const name = rule.newName ?? rule.name;
        const oldTag = old.slice(imageName(old).length);
        c['image'] = rule.digest ? `${name}@${rule.digest}` : rule.newTag ? `${name}:${rule.newTag}` : `${name}${oldTag}`;
      }
    } else {
      setImages(value, rule);
    }
  }
}

// kustomize's "legacy" output order, which `kubectl kustomize` uses: these kinds first, in this
// order, then the others by group/version/kind, then webhooks; within a kind by namespace and name.
const ORDER_FIRST = ['Namespace', 'ResourceQuota', 'StorageClass', 'CustomResourceDefinition', 'ServiceAccount', 'PodSecurityPolicy',
  'Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding', 'ConfigMap', 'Secret', 'Endpoints', 'Service', 'LimitRange',
  'PriorityClass', 'PersistentVolume', 'PersistentVolumeClaim', 'Deployment', 'StatefulSet', 'CronJob', 'PodDisruptionBudget'];
const ORDER_LAST = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];

function sortKey(o: KObject): [number, string, string] {
  const first = ORDER_FIRST.indexOf(o.kind);
  const last = ORDER_LAST.indexOf(o.kind);
  const gv = groupVersion(o.apiVersion);
  const rank = first >= 0 ? first : last >= 0 ? ORDER_FIRST.length + 1 + last : ORDER_FIRST.length;
  const gvk = first >= 0 || last >= 0 ? '' : `${gv.group || '~G'}_${gv.version}_${o.kind}`;
  return [rank, gvk, `${o.metadata.namespace ?? ''}|${o.metadata.name}`];
}

export function sortObjects(objects: readonly KObject[]): KObject[] {
  return [...objects].sort((a, b) => {
    const ka = sortKey(a);
    const kb = sortKey(b);
    return ka[0] - kb[0] || (ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0) || (ka[2] < kb[2] ? -1 : ka[2] > kb[2] ? 1 : 0);
  });
}

export function toYaml(objects: readonly KObject[]): string {
  return sortObjects(objects).map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

export const DEPLOY_DIR = resolve(dirname(new URL(import.meta.url).pathname), '../../deploy');
export const OVERLAYS = ['dry-run', 'enforce', 'with-redis'] as const;
/** The single-file install (`kubectl apply -f deploy/volume-medic.yaml`) is the dry-run overlay. */
export const RENDERED_FILE = join(DEPLOY_DIR, 'volume-medic.yaml');
export const RENDERED_OVERLAY = 'dry-run';

export function renderedFileText(): string {
  const header = [
    '# volume-medic, rendered from deploy/overlays/dry-run by scripts/deploy/render.ts. Do not edit:',
    '# change deploy/base or the overlay and run `node scripts/deploy/render.ts` (CI checks they agree).',
    '# Before applying, create the Secret volume-medic-webhook-token and the Redis Secrets',
    '# (`node scripts/deploy/redis-secrets.ts --address <your redis> | kubectl apply -f -`; README: Install on a cluster).',
    '',
  ].join('\n');
  return `${header}${toYaml(renderKustomization(join(DEPLOY_DIR, 'overlays', RENDERED_OVERLAY)))}`;
}
