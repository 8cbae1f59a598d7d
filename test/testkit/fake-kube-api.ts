import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeConfigFor } from '../../src/adapters/kube/kube-config.ts';
import { applyJsonPatch, type DeleteOptions, JsonPatchError, jsonPatchFailed, type PatchOp, podGracePeriod, preconditionConflict } from './fake-kube-writes.ts';
import { decodeKubeProtobuf } from './kube-protobuf.ts';
import { strategicMergePatch } from './strategic-merge.ts';
import { invalidStatus, validateEventsV1Event, type WriteValidator } from './fake-kube-validation.ts';

// A small API server that speaks the real list/watch protocol to the real @kubernetes/client-node:
// - GET collection: a `<Kind>List` with metadata.resourceVersion (items without kind/apiVersion,
//   as the real server sends them), filtered by namespace and fieldSelector (`a.b=c`, `a!=b`).
// - GET collection `?watch=true&resourceVersion=N`: 200, chunked, one JSON line per event
//   `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":...}`; history after N is replayed
//   first. N older than the compaction point gets `ERROR` with a `Status` 410 Expired and the
//   stream ends (what a real apiserver does), or an HTTP 410 with `expireAs: 'http'`.
// - GET/POST/PATCH (json-patch with `test` ops: 422 when one fails; and merge-patch) of single objects, with 404/409 `Status` answers;
//   PUT (replace) with the real server's optimistic concurrency: a stale metadata.resourceVersion
//   gets 409 Conflict (what leader election on a Lease relies on).
// - DELETE with DeleteOptions (preconditions, a pod's graceful delete) and JSON patches with `test`
//   ops, answered as kube-apiserver does (fake-kube-writes.ts says how, and where that is from).
// Connections can be dropped gracefully or abruptly, held while a test changes the world, and any
// request can be made to fail. Every request and every write is recorded for assertions.
// - POST tokenreviews (authentication.k8s.io/v1) and subjectaccessreviews (authorization.k8s.io/v1),
//   answered 201 as the real API server does, from the users (token -> user info) and the RBAC
//   grants a test gives (addUser, grant). Only resource attributes are authorised; a SAR for a
//   user or group nobody granted anything is `allowed: false` with no reason, as RBAC answers.
// - `absentGroups`: API groups whose CRDs are not installed answer 404.
// - Protobuf request bodies (`application/vnd.kubernetes.protobuf`) for core/v1 Events, which
//   node-problem-detector's client sends (kube-protobuf.ts); answers are always JSON, which that
//   client accepts (`Accept: application/vnd.kubernetes.protobuf, */*`).
// - Strategic merge patches merge `conditions` lists by `type` (strategic-merge.ts); a
//   `<name>/status` subresource path reads and patches the object itself, except in a collection
//   given statusSubresource() (a CRD with `subresources.status`): there a create drops the
//   status, a write to the object keeps its stored status, and a write to `<name>/status` changes
//   the status alone, as the real server does.
// - Validation on create, update and patch (fake-kube-validation.ts): events.k8s.io/v1 Events as
//   the API server validates them (only `series` may change on an update), and whatever a test
//   adds with validate() (a CRD's schema); a refused write is 422 Invalid with its field causes.
// Simplification: core/v1 and events.k8s.io/v1 Events are separate collections here.

type Obj = Record<string, any>;

interface Change {
  rv: number;
  collection: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Obj;
}

interface Watcher {
  collection: string;
  namespace?: string;
  selector: Selector;
  bookmarks: boolean;
  res: ServerResponse;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
  body?: unknown;
}

type Selector = (o: Obj) => boolean;

export interface FakeUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  /** Audiences the token is good for; default the API server's (`https://kubernetes.default.svc`). */
  audiences?: string[];
}

/**
 * What TokenReview says of a pod's projected service-account token, as enrolment reads it: the
 * service account (`<namespace>/<name>`) as the username, the pod's name and uid and, when the
 * token is bound to one, its node as extras. Audience `volume-medic` unless said.
 */
export function podTokenUser(o: { serviceAccount: string; pod: string; uid: string; node?: string; audiences?: string[] }): FakeUser {
  const x = 'authentication.kubernetes.io/';
  return {
    username: `system:serviceaccount:${o.serviceAccount.replace('/', ':')}`,
    groups: ['system:serviceaccounts'],
    extra: { [`${x}pod-name`]: [o.pod], [`${x}pod-uid`]: [o.uid], ...(o.node ? { [`${x}node-name`]: [o.node] } : {}) },
    audiences: o.audiences ?? ['volume-medic'],
  };
}

/** An RBAC grant: verbs on resources of an API group, to a user or a group ('*' verb: all). */
export interface FakeGrant {
  user?: string;
  group?: string;
  apiGroup: string;
  resource: string;
  verbs: string[];
}

const API_SERVER_AUDIENCE = 'https://kubernetes.default.svc';

const pathValue = (o: Obj, path: string): unknown => path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Obj)[k] : undefined), o);

function fieldSelector(sel: string | undefined): Selector {
  if (!sel) return () => true;
  const terms = sel
    .split(',')
    .filter(Boolean)
    .map((t) => {
      const m = /^([^!=]+)(==|!=|=)(.*)$/.exec(t);
      if (!m) throw new Error(`bad field selector ${t}`);
      return { path: m[1]!, neg: m[2] === '!=', value: m[3]! };
    });
  return (o) => terms.every((t) => (String(pathValue(o, t.path) ?? '') === t.value) !== t.neg);
}

function collectionOf(apiVersion: string, kind: string): string {
  return `${apiVersion.includes('/') ? `apis/${apiVersion}` : `api/${apiVersion}`}/${kind.toLowerCase()}s`;
}

export function parseKubePath(pathname: string): { collection: string; namespace?: string; name?: string; subresource?: string } | undefined {
  const all = pathname.split('/').filter(Boolean);
  const gvLength = all[0] === 'api' ? 2 : all[0] === 'apis' ? 3 : 0;
  if (gvLength === 0) return undefined;
  const gv = all.slice(0, gvLength);
  let rest = all.slice(gvLength);
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  if (!resource) return undefined;
  return { collection: `${gv.join('/')}/${resource}`, ...(namespace ? { namespace } : {}), ...(name ? { name } : {}), ...(subresource ? { subresource } : {}) };
}

const status = (code: number, reason: string, message: string): Obj => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});
const clone = <T>(o: T): T => structuredClone(o);
const key = (ns: string | undefined, name: string): string => `${ns ?? ''}/${name}`;

/** RFC 7386: an object patches into the target's object, or into an empty one (its nulls remove nothing, and are not stored). */
function mergePatch(target: Obj, patch: Obj): void {
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete target[k];
    else if (v && typeof v === 'object' && !Array.isArray(v)) {
      if (!target[k] || typeof target[k] !== 'object' || Array.isArray(target[k])) target[k] = {};
      mergePatch(target[k], v as Obj);
    } else target[k] = v;
  }
}

export class FakeKubeApi {
  url = '';
  readonly requests: RecordedRequest[] = [];
  /** API groups whose CRDs are not installed: every request under `/apis/<group>/` is answered 404. */
  readonly absentGroups = new Set<string>();
  /** Server-side 410 as an ERROR line in a 200 stream (real apiserver), or as an HTTP 410 answer. */
  expireAs: 'event' | 'http' = 'event';
  private server: Server | undefined;
  private rv = 100;
  private oldestRv = 0;
  private readonly store = new Map<string, Map<string, Obj>>();
  private readonly history: Change[] = [];
  private readonly watchers = new Set<Watcher>();
  private held: { promise: Promise<void>; release: () => void } | undefined;
  private failures: Array<{ match: RegExp; code: number; times: number }> = [];
  private gates: Array<{ match: RegExp; promise: Promise<void> }> = [];
  private readonly users = new Map<string, FakeUser>();
  private readonly grants: FakeGrant[] = [];
  private readonly validators = new Map<string, WriteValidator[]>([['apis/events.k8s.io/v1/events', [validateEventsV1Event]]]);
  private readonly statusSubresources = new Set<string>();

  /** `collection` has a status subresource (a CRD's `subresources.status`): status and the rest are written apart. */
  statusSubresource(collection: string): void {
    this.statusSubresources.add(collection);
  }

  /** What a write stores under a status subresource: the status alone through `/status`, all but the status otherwise. */
  private statusSplit(p: { collection: string; subresource?: string }, next: Obj, existing: Obj | undefined): Obj {
    if (!this.statusSubresources.has(p.collection)) return next;
    const base = p.subresource === 'status' && existing ? clone(existing) : next;
    const status = p.subresource === 'status' ? next['status'] : existing?.['status'];
    const { status: _drop, ...rest } = base;
    return status === undefined ? rest : { ...rest, status: clone(status) };
  }

  /** Checks every write to `collection` (`apis/<group>/<version>/<resource>`) with `validator` too. */
  validate(collection: string, validator: WriteValidator): void {
    this.validators.set(collection, [...(this.validators.get(collection) ?? []), validator]);
  }

  /** The 422 answer when a validator refuses the write, else undefined. */
  private refused(collection: string, next: Obj, old: Obj | undefined): Obj | undefined {
    const errors = (this.validators.get(collection) ?? []).flatMap((v) => v(next, old));
    if (errors.length === 0) return undefined;
    const [, group = ''] = /^apis\/([^/]+)\//.exec(collection) ?? [];
    return invalidStatus(String(next['kind'] ?? old?.['kind'] ?? ''), group, String(next['metadata']?.name ?? ''), errors);
  }

  /** A bearer token the fake's TokenReview accepts as this user. */
  addUser(token: string, user: FakeUser): void {
    this.users.set(token, user);
  }

  /**
   * An agent's pod as enrolment asks about it: its projected token (TokenReview answers podTokenUser),
   * the Pod on its node, and the Node (made when absent). Enrolment answers only for a Node the API
   * server has, to a pod that still exists.
   */
  addAgentPod(token: string, o: { serviceAccount: string; pod: string; uid: string; node: string }): void {
    this.addUser(token, podTokenUser(o));
    if (!this.get('v1', 'Node', o.node)) this.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: o.node } });
    const namespace = o.serviceAccount.slice(0, o.serviceAccount.indexOf('/'));
    this.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: o.pod, namespace, uid: o.uid }, spec: { nodeName: o.node } });
  }

  removeUser(token: string): void {
    this.users.delete(token);
  }

  /** What SubjectAccessReview allows from now on. */
  grant(g: FakeGrant): void {
    this.grants.push(g);
  }

  revokeAll(): void {
    this.grants.length = 0;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: Error) => {
        if (!res.headersSent) this.send(res, 500, status(500, 'InternalError', err.message));
        else res.destroy();
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  kubeConfig(): KubeConfig {
    return kubeConfigFor(this.url, 'fake-token');
  }

  async close(): Promise<void> {
    this.held?.release();
    for (const w of this.watchers) w.res.destroy();
    this.watchers.clear();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  get resourceVersion(): number {
    return this.rv;
  }

  /** Create or replace an object (needs apiVersion, kind, metadata.name); watchers get ADDED/MODIFIED. */
  put<T extends Obj>(input: T): T {
    const obj = clone(input) as Obj;
    const collection = collectionOf(obj['apiVersion'], obj['kind']);
    const objects = this.collection(collection);
    const k = key(obj['metadata']?.namespace, obj['metadata'].name);
    const existing = objects.get(k);
    obj['metadata'] = {
      uid: existing?.['metadata'].uid ?? randomUUID(),
      creationTimestamp: existing?.['metadata'].creationTimestamp ?? new Date().toISOString(),
      ...obj['metadata'],
      resourceVersion: String(++this.rv),
    };
    objects.set(k, obj);
    this.emit({ rv: this.rv, collection, type: existing ? 'MODIFIED' : 'ADDED', object: obj });
    return clone(obj) as T;
  }

  remove(apiVersion: string, kind: string, name: string, namespace?: string): void {
    const collection = collectionOf(apiVersion, kind);
    const objects = this.collection(collection);
    const existing = objects.get(key(namespace, name));
    if (!existing) return;
    objects.delete(key(namespace, name));
    const obj = { ...clone(existing), metadata: { ...existing['metadata'], resourceVersion: String(++this.rv) } };
    this.emit({ rv: this.rv, collection, type: 'DELETED', object: obj });
  }

  get(apiVersion: string, kind: string, name: string, namespace?: string): Obj | undefined {
    const o = this.collection(collectionOf(apiVersion, kind)).get(key(namespace, name));
    return o ? clone(o) : undefined;
  }

  list(apiVersion: string, kind: string): Obj[] {
    return [...this.collection(collectionOf(apiVersion, kind)).values()].map(clone);
  }

  /** Forget history: a watch from any resourceVersion before now is answered 410 Expired. */
  compact(): void {
    this.oldestRv = this.rv;
    this.history.length = 0;
  }

  /**
   * Close every open watch. `abrupt` resets the socket (a crashed apiserver or LB); otherwise the
   * stream ends cleanly (the apiserver's own timeout). `hold` keeps new watch requests waiting
   * until releaseWatches(), so a test can change the world while the client is disconnected.
   */
  dropWatches(opts: { abrupt?: boolean; hold?: boolean } = {}): number {
    if (opts.hold && !this.held) {
      let release!: () => void;
      const promise = new Promise<void>((r) => (release = r));
      this.held = { promise, release };
    }
    const n = this.watchers.size;
    for (const w of this.watchers) opts.abrupt ? w.res.destroy() : w.res.end();
    this.watchers.clear();
    return n;
  }

  releaseWatches(): void {
    const h = this.held;
    this.held = undefined;
    h?.release();
  }

  /** A BOOKMARK to every watch that asked for them (allowWatchBookmarks=true). */
  bookmark(): void {
    for (const w of this.watchers) {
      if (w.bookmarks) this.line(w.res, { type: 'BOOKMARK', object: { kind: 'Bookmark', metadata: { resourceVersion: String(this.rv) } } });
    }
  }

  /** The next `times` requests whose `METHOD path?query` matches get `code`. */
  failNext(match: RegExp, code = 500, times = 1): void {
    this.failures.push({ match, code, times });
  }

  /**
   * Requests whose `METHOD path?query` matches are recorded, then wait until the returned function
   * is called (to make two clients' writes meet, as in a real race).
   */
  holdRequests(match: RegExp): () => void {
    let release!: () => void;
    const gate = { match, promise: new Promise<void>((r) => (release = r)) };
    this.gates.push(gate);
    return () => {
      this.gates = this.gates.filter((g) => g !== gate);
      release();
    };
  }

  openWatches(collection?: string): number {
    return [...this.watchers].filter((w) => !collection || w.collection === collection).length;
  }

  requestsTo(method: string, pathPrefix: string, watch?: boolean): RecordedRequest[] {
    return this.requests.filter(
      (r) => r.method === method && r.path.startsWith(pathPrefix) && (watch === undefined || (r.query['watch'] === 'true') === watch),
    );
  }

  private collection(c: string): Map<string, Obj> {
    let m = this.store.get(c);
    if (!m) this.store.set(c, (m = new Map()));
    return m;
  }

  private emit(change: Change): void {
    this.history.push(change);
    for (const w of this.watchers) this.deliver(w, change);
  }

  private deliver(w: Watcher, c: Change): void {
    if (c.collection !== w.collection) return;
    if (w.namespace && c.object['metadata']?.namespace !== w.namespace) return;
    if (!w.selector(c.object)) return;
    this.line(w.res, { type: c.type, object: c.object });
  }

  private line(res: ServerResponse, ev: unknown): void {
    if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(ev)}\n`);
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  private async readBody(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    if (String(req.headers['content-type'] ?? '').startsWith('application/vnd.kubernetes.protobuf')) return decodeKubeProtobuf(raw);
    const text = raw.toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://x');
    const query = Object.fromEntries(u.searchParams);
    const method = req.method ?? 'GET';
    const body = method === 'POST' || method === 'PATCH' || method === 'PUT' || method === 'DELETE' ? await this.readBody(req) : undefined;
    this.requests.push({
      method,
      path: u.pathname,
      query,
      ...(req.headers['content-type'] ? { contentType: req.headers['content-type'] } : {}),
      ...(body !== undefined ? { body } : {}),
    });

    for (const g of this.gates) if (g.match.test(`${method} ${u.pathname}${u.search}`)) await g.promise;
    const fail = this.failures.find((f) => f.times > 0 && f.match.test(`${method} ${u.pathname}${u.search}`));
    if (fail) {
      fail.times--;
      this.failures = this.failures.filter((f) => f.times > 0);
      return this.send(res, fail.code, status(fail.code, 'InternalError', 'injected failure'));
    }
    if (method === 'POST' && u.pathname === '/apis/authentication.k8s.io/v1/tokenreviews') return this.send(res, 201, this.tokenReview(body as Obj));
    if (method === 'POST' && u.pathname === '/apis/authorization.k8s.io/v1/subjectaccessreviews') return this.send(res, 201, this.accessReview(body as Obj));
    const p = parseKubePath(u.pathname);
    if (p && this.absentGroups.has(u.pathname.split('/')[2] ?? ''))
      return this.send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
    if (!p) return this.send(res, 404, status(404, 'NotFound', `the server could not find the requested resource ${u.pathname}`));
    const objects = this.collection(p.collection);

    if (method === 'GET' && !p.name && (query['watch'] === 'true' || query['watch'] === '1')) return this.watch(req, res, p, query);
    if (method === 'GET' && !p.name) {
      const selector = fieldSelector(query['fieldSelector']);
      const items = [...objects.values()]
        .filter((o) => (!p.namespace || o['metadata']?.namespace === p.namespace) && selector(o))
        .map((o) => {
          const { apiVersion: _a, kind: _k, ...rest } = clone(o);
          return rest;
        });
      const kind = p.collection.split('/').pop()!;
      return this.send(res, 200, {
        kind: `${kind}List`,
        apiVersion: p.collection.replace(/^apis?\//, '').replace(/\/[^/]+$/, ''),
        metadata: { resourceVersion: String(this.rv) },
        items,
      });
    }
    if (method === 'GET') {
      const o = objects.get(key(p.namespace, p.name!));
      return o ? this.send(res, 200, o) : this.send(res, 404, status(404, 'NotFound', `${p.collection} "${p.name}" not found`));
    }
    if (method === 'POST' && !p.name) {
      const obj = clone(body as Obj);
      obj['metadata'] ??= {};
      if (!obj['metadata'].name && obj['metadata'].generateName) obj['metadata'].name = `${obj['metadata'].generateName}${randomUUID().slice(0, 5)}`;
      if (p.namespace) obj['metadata'].namespace = p.namespace;
      // The server stamps a created object; client-go sends its zero time as null.
      if (obj['metadata'].creationTimestamp === null) delete obj['metadata'].creationTimestamp;
      if (objects.has(key(p.namespace, obj['metadata'].name))) {
        return this.send(res, 409, status(409, 'AlreadyExists', `${p.collection} "${obj['metadata'].name}" already exists`));
      }
      const created = this.statusSplit(p, obj, undefined);
      const invalid = this.refused(p.collection, created, undefined);
      if (invalid) return this.send(res, 422, invalid);
      return this.send(res, 201, this.put(created));
    }
    if (method === 'PATCH' && p.name) {
      const existing = objects.get(key(p.namespace, p.name));
      if (!existing) return this.send(res, 404, status(404, 'NotFound', `${p.collection} "${p.name}" not found`));
      const obj = clone(existing);
      const ct = String(req.headers['content-type'] ?? '');
      if (ct.startsWith('application/json-patch+json')) {
        try {
          applyJsonPatch(obj, body as PatchOp[]);
        } catch (err) {
          if (err instanceof JsonPatchError) return this.send(res, 422, jsonPatchFailed());
          throw err;
        }
      } else if (ct.startsWith('application/merge-patch+json')) mergePatch(obj, body as Obj);
      else if (ct.startsWith('application/strategic-merge-patch+json')) strategicMergePatch(obj, body as Obj);
      else
        return this.send(
          res,
          415,
          status(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got ${ct})`,
          ),
        );
      const patched = this.statusSplit(p, obj, existing);
      const invalid = this.refused(p.collection, patched, existing);
      if (invalid) return this.send(res, 422, invalid);
      return this.send(res, 200, this.put(patched));
    }
    if (method === 'PUT' && p.name) {
      // Replace (update): optimistic concurrency on metadata.resourceVersion, as the real server.
      const existing = objects.get(key(p.namespace, p.name));
      if (!existing) return this.send(res, 404, status(404, 'NotFound', `${p.collection} "${p.name}" not found`));
      const obj = clone(body as Obj);
      const rv = obj['metadata']?.resourceVersion;
      if (rv !== undefined && rv !== existing['metadata'].resourceVersion) {
        return this.send(
          res,
          409,
          status(
            409,
            'Conflict',
            `Operation cannot be fulfilled on ${p.collection.split('/').pop()} "${p.name}": the object has been modified; please apply your changes to the latest version and try again`,
          ),
        );
      }
      if (obj['metadata']?.name !== p.name) return this.send(res, 400, status(400, 'BadRequest', 'the name of the object does not match the name on the URL'));
      if (p.namespace) obj['metadata'].namespace = p.namespace;
      const replaced = this.statusSplit(p, obj, existing);
      const invalid = this.refused(p.collection, replaced, existing);
      if (invalid) return this.send(res, 422, invalid);
      return this.send(res, 200, this.put(replaced));
    }
    if (method === 'DELETE' && p.name) {
      const [code, answer] = this.delete(p, body as DeleteOptions | undefined, query);
      return this.send(res, code, answer);
    }
    return this.send(res, 405, status(405, 'MethodNotAllowed', `${method} not supported by the fake`));
  }

  /** Every request that would change something (not GET), in order: what "no write reached the API server" is checked on. */
  writeRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.method !== 'GET');
  }

  /** A DELETE as kube-apiserver answers it (fake-kube-writes.ts): the status and the body. */
  private delete(
    p: { collection: string; namespace?: string; name?: string },
    options: DeleteOptions | undefined,
    query: Record<string, string>,
  ): [number, Obj] {
    const objects = this.collection(p.collection);
    const name = p.name!;
    const existing = objects.get(key(p.namespace, name));
    const resource = p.collection.split('/').pop()!;
    if (!existing) return [404, { ...status(404, 'NotFound', `${resource} "${name}" not found`), details: { name, kind: resource } }];
    const isPod = p.collection === 'api/v1/pods';
    const conflict = preconditionConflict(isPod ? 'Pod' : existing['kind'], existing, options);
    if (conflict) return [409, conflict];
    const grace = isPod ? podGracePeriod(existing, options, query['gracePeriodSeconds']) : 0;
    if (grace === 0) {
      this.remove(existing['apiVersion'], existing['kind'], name, p.namespace);
      return [200, existing];
    }
    const meta = existing['metadata'] as Obj;
    const deadline = Date.now() + grace * 1000;
    // Already terminating: a shorter grace period moves the deadline closer, a longer one is ignored.
    if (meta['deletionTimestamp'] && Date.parse(meta['deletionTimestamp']) <= deadline) return [200, existing];
    const at = new Date(deadline).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return [200, this.put({ ...clone(existing), metadata: { ...meta, deletionTimestamp: at, deletionGracePeriodSeconds: grace } })];
  }

  private tokenReview(review: Obj): Obj {
    const spec = (review?.['spec'] ?? {}) as { token?: string; audiences?: string[] };
    const user = spec.token !== undefined ? this.users.get(spec.token) : undefined;
    const base = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: { creationTimestamp: null }, spec };
    const tokenAudiences = user?.audiences ?? [API_SERVER_AUDIENCE];
    const wanted = spec.audiences?.length ? spec.audiences : [API_SERVER_AUDIENCE];
    const audiences = wanted.filter((a) => tokenAudiences.includes(a));
    if (!user || audiences.length === 0) return { ...base, status: { user: {}, error: '[invalid bearer token, token lookup failed]' } };
    const { username, uid, groups, extra } = user;
    return {
      ...base,
      status: {
        authenticated: true,
        user: { username, ...(uid ? { uid } : {}), groups: [...(groups ?? []), 'system:authenticated'], ...(extra ? { extra } : {}) },
        audiences,
      },
    };
  }

  private accessReview(review: Obj): Obj {
    const spec = (review?.['spec'] ?? {}) as {
      user?: string;
      groups?: string[];
      resourceAttributes?: { group?: string; resource?: string; verb?: string };
    };
    const ra = spec.resourceAttributes ?? {};
    const allowed = this.grants.some(
      (g) =>
        (g.user === undefined || g.user === spec.user) &&
        (g.group === undefined || (spec.groups ?? []).includes(g.group)) &&
        (g.user !== undefined || g.group !== undefined) &&
        g.apiGroup === (ra.group ?? '') &&
        g.resource === ra.resource &&
        (g.verbs.includes('*') || g.verbs.includes(ra.verb ?? '')),
    );
    return {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: { creationTimestamp: null },
      spec,
      status: allowed ? { allowed: true, reason: "RBAC: allowed by the fake's grants" } : { allowed: false },
    };
  }

  private async watch(req: IncomingMessage, res: ServerResponse, p: { collection: string; namespace?: string }, query: Record<string, string>): Promise<void> {
    if (this.held) await this.held.promise;
    const rvParam = query['resourceVersion'] ?? '';
    const from = rvParam === '' || rvParam === '0' ? undefined : Number(rvParam);
    if (from !== undefined && from < this.oldestRv) {
      const gone = status(410, 'Expired', `too old resource version: ${from} (${this.oldestRv})`);
      if (this.expireAs === 'http') return this.send(res, 410, gone);
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      this.line(res, { type: 'ERROR', object: gone });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // The apiserver sends the headers at once; the client's watch() resolves only then.
    res.flushHeaders();
    const w: Watcher = {
      collection: p.collection,
      ...(p.namespace ? { namespace: p.namespace } : {}),
      selector: fieldSelector(query['fieldSelector']),
      bookmarks: query['allowWatchBookmarks'] === 'true',
      res,
    };
    if (from === undefined) {
      // No resourceVersion: the current state as synthetic ADDED events, then changes.
      for (const o of this.collection(p.collection).values()) this.deliver(w, { rv: this.rv, collection: p.collection, type: 'ADDED', object: o });
    } else {
      for (const c of this.history) if (c.rv > from) this.deliver(w, c);
    }
    this.watchers.add(w);
    const gone = (): void => {
      this.watchers.delete(w);
    };
    req.on('close', gone);
    res.on('close', gone);
  }
}

export async function startFakeKubeApi(): Promise<FakeKubeApi> {
  return new FakeKubeApi().start();
}
