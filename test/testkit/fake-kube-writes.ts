import { isDeepStrictEqual } from 'node:util';

// What test/testkit/fake-kube-api.ts does on the writes of the Kubernetes write port, as
// kube-apiserver does them, so the port's tests see the answers a cluster gives:
//
// - JSON patch (RFC 6902, application/json-patch+json): the ops apply in order to a copy and the
//   object changes only when all of them apply. A failed `test` op, or an op whose path is
//   missing, is 422 with reason Invalid and the generic message: kube-apiserver's
//   staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go (jsonPatcher.applyJSPatch)
//   answers `errors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)`,
//   whose message is "the server rejected our request due to an error in our request" and which
//   drops the json-patch library's own text ("testing value /spec/taints/2 failed"). Before
//   kubernetes/kubernetes#68346 (1.12) the same failure was a 500.
// - DELETE with DeleteOptions.preconditions: a uid or resourceVersion other than the object's is
//   409 Conflict, checked before anything else (staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go,
//   BeforeDelete): `Operation cannot be fulfilled on Pod "<name>": the UID in the precondition (<x>)
//   does not match the UID in record (<y>). The object might have been deleted and then recreated`.
//   (The storage layer's "Precondition failed: UID in precondition: ..." is only reached by a race
//   after BeforeDelete passed; the fake has no such race.)
// - A pod's delete is graceful: the grace period is DeleteOptions.gracePeriodSeconds, else the pod's
//   spec.terminationGracePeriodSeconds, else 30; 0 for a pod that is not scheduled or has finished
//   (pkg/registry/core/pod/strategy.go, CheckGracefulDelete); a negative one becomes 1. Graceful:
//   the pod stays with metadata.deletionTimestamp (now + grace) and deletionGracePeriodSeconds
//   (a MODIFIED event), for kubelet to finish; 0 removes it at once (DELETED). Either way the
//   answer is 200 with the pod (the pod store returns the deleted object).

type Obj = Record<string, any>;
export type PatchOp = { op: string; path: string; value?: unknown; from?: string };

export class JsonPatchError extends Error {}

const tokens = (path: string): string[] =>
  path === ''
    ? []
    : path
        .split('/')
        .slice(1)
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));

function index(arr: unknown[], token: string, forAdd: boolean): number {
  if (forAdd && token === '-') return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new JsonPatchError(`not an array index: ${token}`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new JsonPatchError(`array index out of bounds: ${i}`);
  return i;
}

function parentOf(doc: Obj, path: string): { parent: Obj | unknown[]; last: string } {
  const parts = tokens(path);
  const last = parts.pop();
  if (last === undefined) throw new JsonPatchError('the whole document cannot be patched');
  let parent: unknown = doc;
  for (const p of parts) {
    if (Array.isArray(parent)) parent = parent[index(parent, p, false)];
    else if (parent && typeof parent === 'object' && p in parent) parent = (parent as Obj)[p];
    else throw new JsonPatchError(`doc is missing path: ${path}`);
  }
  if (!parent || typeof parent !== 'object') throw new JsonPatchError(`doc is missing path: ${path}`);
  return { parent: parent as Obj | unknown[], last };
}

function valueAt(doc: Obj, path: string): { found: boolean; value?: unknown } {
  if (path === '') return { found: true, value: doc };
  const { parent, last } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    const i = Number(last);
    return /^(0|[1-9]\d*)$/.test(last) && i < parent.length ? { found: true, value: parent[i] } : { found: false };
  }
  return last in parent ? { found: true, value: (parent as Obj)[last] } : { found: false };
}

/** Applies the ops to `doc` in place; throws JsonPatchError on the first that does not apply (apply to a copy). */
export function applyJsonPatch(doc: Obj, ops: PatchOp[]): void {
  if (!Array.isArray(ops)) throw new JsonPatchError('a JSON patch is an array of operations');
  for (const op of ops) {
    if (op.op === 'test') {
      const at = valueAt(doc, op.path);
      if (!at.found || !isDeepStrictEqual(at.value, op.value)) throw new JsonPatchError(`testing value ${op.path} failed`);
      continue;
    }
    const { parent, last } = parentOf(doc, op.path);
    if (op.op === 'add') {
      if (Array.isArray(parent)) parent.splice(index(parent, last, true), 0, structuredClone(op.value));
      else parent[last] = structuredClone(op.value);
    } else if (op.op === 'replace' || op.op === 'remove') {
      if (!valueAt(doc, op.path).found) throw new JsonPatchError(`${op.op} operation does not apply: doc is missing key: ${op.path}`);
      if (Array.isArray(parent)) parent.splice(index(parent, last, false), 1, ...(op.op === 'replace' ? [structuredClone(op.value)] : []));
      else if (op.op === 'replace') parent[last] = structuredClone(op.value);
      else delete parent[last];
    } else throw new JsonPatchError(`json-patch op ${op.op} not supported by the fake`);
  }
}

/** The 422 kube-apiserver answers for a JSON patch that does not apply (see the header). */
export const jsonPatchFailed = (): Obj => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'the server rejected our request due to an error in our request',
  reason: 'Invalid',
  details: {},
  code: 422,
});

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** The 409 of a failed precondition, or undefined when the preconditions hold (rest.BeforeDelete). */
export function preconditionConflict(kind: string, obj: Obj, options: DeleteOptions | undefined): Obj | undefined {
  const pre = options?.preconditions;
  const meta = obj['metadata'] as Obj;
  const conflict = (why: string): Obj => ({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `Operation cannot be fulfilled on ${kind} "${meta['name']}": ${why}`,
    reason: 'Conflict',
    details: { name: meta['name'], kind },
    code: 409,
  });
  if (pre?.uid !== undefined && pre.uid !== meta['uid']) {
    return conflict(
      `the UID in the precondition (${pre.uid}) does not match the UID in record (${meta['uid']}). The object might have been deleted and then recreated`,
    );
  }
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== meta['resourceVersion']) {
    return conflict(
      `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${meta['resourceVersion']}). The object might have been modified`,
    );
  }
  return undefined;
}

/** The grace period a pod's delete gets (pod strategy's CheckGracefulDelete and BeforeDelete). */
export function podGracePeriod(pod: Obj, options: DeleteOptions | undefined, queryGrace: string | undefined): number {
  const given = options?.gracePeriodSeconds ?? (queryGrace === undefined ? undefined : Number(queryGrace));
  const asked = given !== undefined && given < 0 ? 1 : given;
  const phase = pod['status']?.phase;
  if (!pod['spec']?.nodeName || phase === 'Failed' || phase === 'Succeeded') return 0;
  return asked ?? pod['spec']?.terminationGracePeriodSeconds ?? 30;
}
