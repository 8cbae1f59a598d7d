import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { TokenReviewResult } from '../auth/access-reviews.ts';
import { isNodeName } from '../../core/catalogue/names.ts';

// Who an enrolment token belongs to: a pod of a service account allowed to enrol, and the node
// that pod runs on. The API server says so (TokenReview of a projected token bound to the pod);
// the node comes from the token's own claim (`authentication.kubernetes.io/node-name`, Kubernetes
// 1.30+), else from the pod it names, whose uid must match the token's (a pod re-created under
// the same name is another pod). A token is reviewed once: its identity is kept until the token
// expires (at most MAX_CACHE_MS), so a fleet enrolling again costs no TokenReview, and concurrent
// enrolments with one token share one review. What is kept stands for the review, not for the
// pod's life: an identity taken from the cache holds only while its pod still exists with the
// token's uid on the same node (one GET of the pod, which the TokenReview would also have made),
// and forgetNode drops every identity of a node whose Node went or whose credentials were revoked.

const EXTRA = 'authentication.kubernetes.io/';
const MAX_CACHE_MS = 3_600_000;
const MAX_ENTRIES = 50_000;

export type Identity =
  | {
      as: 'node-agent';
      node: string;
      /** The token's `node-uid` claim (Kubernetes 1.30+), when it has one: the Node it was issued on. */
      nodeUid?: string;
      serviceAccount: string;
      pod: string;
      podUid: string;
    }
  | { as: 'cluster-worker'; serviceAccount: string; pod: string; podUid: string };

export type IdentityOutcome = { ok: true; identity: Identity } | { ok: false; status: 401 | 403; error: string };

export interface TokenIdentityPorts {
  reviewToken(token: string): Promise<TokenReviewResult>;
  /** The pod's uid and node, or undefined when there is no such pod. */
  podOf(namespace: string, name: string): Promise<{ uid?: string; nodeName?: string } | undefined>;
}

const JwtClaims = z.object({ exp: z.number().optional() });

/** The token's own expiry (not trusted for anything but how long to remember the review). */
function expiryOf(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JwtClaims.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return claims.success && claims.data.exp !== undefined ? claims.data.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export class TokenIdentities {
  readonly #ports: TokenIdentityPorts;
  readonly #nodeAgents: ReadonlySet<string>;
  readonly #clusterWorkers: ReadonlySet<string>;
  readonly #now: () => number;
  /** Tokens the API server accepted (refusals are never kept): at most MAX_ENTRIES, the expired and then the oldest dropped first. */
  readonly #known = new Map<string, { outcome: IdentityOutcome; until: number }>();
  /** Reviews in flight, one per distinct token: as many as requests waiting on the API server (the route charges the failed-auth budget before each). */
  readonly #pending = new Map<string, Promise<IdentityOutcome>>();
  /** TokenReviews made (the enrolment bench counts them). */
  reviews = 0;

  constructor(o: { ports: TokenIdentityPorts; nodeAgents: readonly string[]; clusterWorkers: readonly string[]; now?: () => number }) {
    this.#ports = o.ports;
    const user = (sa: string) => `system:serviceaccount:${sa.replace('/', ':')}`;
    this.#nodeAgents = new Set(o.nodeAgents.map(user));
    this.#clusterWorkers = new Set(o.clusterWorkers.map(user));
    this.#now = o.now ?? Date.now;
  }

  /** Throws ReviewUnavailableError when the API server cannot be asked (503 for the caller). */
  async identify(token: string): Promise<IdentityOutcome> {
    const key = createHash('sha256').update(token).digest('base64url');
    const now = this.#now();
    const known = this.#known.get(key);
    if (known && known.until > now) return this.#stillThere(key, known.outcome);
    let pending = this.#pending.get(key);
    if (!pending) {
      pending = this.#review(token).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
      const outcome = await pending;
      // Refusals are not kept: a pod that enrolled too early (not scheduled yet) tries again.
      if (outcome.ok) this.#remember(key, outcome, Math.min(expiryOf(token) ?? now + MAX_CACHE_MS, now + MAX_CACHE_MS));
      return outcome;
    }
    return pending;
  }

  /** A cached identity, if its pod is still the token's: else forgotten and refused. */
  async #stillThere(key: string, outcome: IdentityOutcome): Promise<IdentityOutcome> {
    if (!outcome.ok) return outcome;
    const id = outcome.identity;
    const namespace = id.serviceAccount.slice(0, id.serviceAccount.indexOf('/'));
    const found = await this.#ports.podOf(namespace, id.pod);
    if (found?.uid === id.podUid && (id.as !== 'node-agent' || found.nodeName === id.node)) return outcome;
    this.#known.delete(key);
    return { ok: false, status: 403, error: `pod ${namespace}/${id.pod} of the token is gone` };
  }

  /** Forgets every identity of a node agent on `node` (its Node deleted, its credentials revoked): the next enrolment is reviewed again. */
  forgetNode(node: string): number {
    let n = 0;
    for (const [k, v] of this.#known) {
      if (v.outcome.ok && v.outcome.identity.as === 'node-agent' && v.outcome.identity.node === node) {
        this.#known.delete(k);
        n++;
      }
    }
    return n;
  }

  #remember(key: string, outcome: IdentityOutcome, until: number): void {
    if (this.#known.size >= MAX_ENTRIES) {
      const now = this.#now();
      for (const [k, v] of this.#known) if (v.until <= now) this.#known.delete(k);
      // Still full: forget the oldest (insertion order); it only costs that pod one more review.
      if (this.#known.size >= MAX_ENTRIES) this.#known.delete(this.#known.keys().next().value!);
    }
    this.#known.set(key, { outcome, until });
  }

  async #review(token: string): Promise<IdentityOutcome> {
    this.reviews++;
    const r = await this.#ports.reviewToken(token);
    if (!r.authenticated) return { ok: false, status: 401, error: `enrolment token refused: ${r.error}` };
    const { username, extra } = r.user;
    const as = this.#nodeAgents.has(username) ? 'node-agent' : this.#clusterWorkers.has(username) ? 'cluster-worker' : undefined;
    if (!as) return { ok: false, status: 403, error: `${username} may not enrol (not a node agent's or the cluster worker's service account)` };
    const claim = (name: string): string | undefined => {
      const v = extra?.[EXTRA + name];
      return v?.length === 1 ? v[0] : undefined;
    };
    const pod = claim('pod-name');
    const podUid = claim('pod-uid');
    if (!pod || !podUid) return { ok: false, status: 403, error: 'the token is not bound to a pod: enrol with a projected service-account token' };
    const serviceAccount = username.slice('system:serviceaccount:'.length).replace(':', '/');
    if (as === 'cluster-worker') return { ok: true, identity: { as, serviceAccount, pod, podUid } };
    let node = claim('node-name');
    if (node === undefined) {
      const namespace = serviceAccount.slice(0, serviceAccount.indexOf('/'));
      const found = await this.#ports.podOf(namespace, pod);
      if (!found || found.uid !== podUid) return { ok: false, status: 403, error: `pod ${namespace}/${pod} of the token is gone` };
      node = found.nodeName;
      if (!node) return { ok: false, status: 403, error: `pod ${namespace}/${pod} is not on a node yet` };
    }
    if (!isNodeName(node)) return { ok: false, status: 403, error: 'the token names no valid node' };
    const nodeUid = claim('node-uid');
    return { ok: true, identity: { as, node, ...(nodeUid ? { nodeUid } : {}), serviceAccount, pod, podUid } };
  }
}
