import { cidrContaining } from '../../core/catalogue/cidr.ts';
import { ReviewUnavailableError, type AccessReviews } from './access-reviews.ts';
import type { FailedAuthLimiter } from './failed-auth-limiter.ts';
import type { Operator } from './operator.ts';
import { describePermission, type Permission } from './permissions.ts';
import { tokenMatcher } from './token-match.ts';

// Who is asking, and may they: the one decision behind every operator route and the dashboard.
// In order:
// 1. an address out of failed attempts gets 429 before anything is looked at;
// 2. identity headers (X-Forwarded-User/-Groups, names configurable) count only when the TCP
//    peer itself is a configured auth proxy; from anyone else they are ignored, as if absent;
// 3. the webhook token is recognised and refused with 403: it may only post webhooks;
// 4. a bearer token is reviewed by the API server (TokenReview); unknown or missing: 401;
// 5. the operator's permission is asked of the cluster's authorizer (SubjectAccessReview); no: 403.
// The API server unreachable (or refusing the receiver's reviews): 503, never a pass.

export type OperatorAuthMode = 'kubernetes' | 'off' | 'insecure';

interface AuthProxy {
  /** TCP peers whose identity headers are believed. */
  cidrs: readonly string[];
  userHeader: string;
  groupsHeader: string;
}

export interface OperatorAuthOptions {
  mode: OperatorAuthMode;
  /** kubernetes mode: the API server's reviews; undefined when no Kubernetes access could be loaded. */
  reviews?: AccessReviews;
  /** Why `reviews` is missing (said in every 503). */
  unavailableReason?: string;
  webhookTokens: readonly string[];
  proxy?: AuthProxy;
  limiter: FailedAuthLimiter;
}

/** What a request shows of itself: its TCP peer, its client address (after trusted proxies), its headers. */
export interface Asking {
  /** The socket's peer: the only address an auth proxy is recognised by. */
  peer: string | undefined;
  /** The client, as far as trusted proxies say (express's req.ip): what failed attempts count against. */
  client: string;
  header(name: string): string | undefined;
}

export type AuthAnswer = { ok: true; operator: Operator } | { ok: false; status: 401 | 403 | 429 | 503; error: string; retryAfter?: number };

const INSECURE_OPERATOR: Operator = { username: 'insecure-anonymous', groups: [], via: 'insecure' };
const WEBHOOK_ONLY =
  'that is the webhook token (VOLUME_MEDIC_TOKEN): it may only post webhooks; sign in with a Kubernetes token of your own user (kubectl create token <service-account>)';
// eslint-disable-next-line no-control-regex
const PRINTABLE = /^[^\u0000-\u001f\u007f]{1,256}$/;

export const bearerOf = (authorization: string | undefined): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];

export class OperatorAuth {
  readonly mode: OperatorAuthMode;
  readonly #o: OperatorAuthOptions;
  readonly #isWebhookToken: (t: string) => boolean;

  constructor(o: OperatorAuthOptions) {
    this.#o = o;
    this.mode = o.mode;
    this.#isWebhookToken = tokenMatcher(o.webhookTokens);
  }

  /** Set when operator identities cannot be checked at all (said on /readyz). */
  get unavailable(): string | undefined {
    if (this.mode === 'off') return 'operator routes are off (OPERATOR_AUTH=off)';
    if (this.mode === 'kubernetes' && !this.#o.reviews) return `operator identities cannot be checked: ${this.#o.unavailableReason ?? 'no Kubernetes access'}`;
    return undefined;
  }

  /** The identity behind a request: proxy headers from a trusted proxy, else its bearer token. */
  async authenticate(req: Asking): Promise<AuthAnswer> {
    const wait = this.#o.limiter.retryAfter(req.client);
    if (wait !== undefined)
      return {
        ok: false,
        status: 429,
        error: `too many failed authentication attempts from this address; retry in ${wait} s`,
        retryAfter: wait,
      };
    const proxied = this.proxyIdentity(req);
    if (proxied) return proxied;
    const token = bearerOf(req.header('authorization'));
    if (token !== undefined && this.#isWebhookToken(token)) return { ok: false, status: 403, error: WEBHOOK_ONLY };
    if (this.mode === 'insecure') return { ok: true, operator: INSECURE_OPERATOR };
    const off = this.unavailable;
    if (off) return { ok: false, status: this.mode === 'off' ? 403 : 503, error: off };
    if (token === undefined) return this.#failed(req.client, 'missing bearer token: an operator identity is a Kubernetes token (e.g. kubectl create token)');
    return this.authenticateToken(token, req.client);
  }

  /** A token given by hand (the dashboard's sign-in form). */
  async authenticateToken(token: string, client: string): Promise<AuthAnswer> {
    const wait = this.#o.limiter.retryAfter(client);
    if (wait !== undefined)
      return {
        ok: false,
        status: 429,
        error: `too many failed authentication attempts from this address; retry in ${wait} s`,
        retryAfter: wait,
      };
    if (this.#isWebhookToken(token)) return { ok: false, status: 403, error: WEBHOOK_ONLY };
    if (this.mode === 'insecure') return { ok: true, operator: INSECURE_OPERATOR };
    const off = this.unavailable;
    if (off || !this.#o.reviews) return { ok: false, status: this.mode === 'off' ? 403 : 503, error: off ?? 'no Kubernetes access' };
    try {
      const r = await this.#o.reviews.reviewToken(token);
      if (!r.authenticated) return this.#failed(client, `the API server did not accept the token: ${r.error}`);
      return { ok: true, operator: { ...r.user, via: 'token' } };
    } catch (err) {
      if (err instanceof ReviewUnavailableError) return { ok: false, status: 503, error: err.message };
      throw err;
    }
  }

  /** May this operator do that? */
  async authorise(operator: Operator, permission: Permission): Promise<AuthAnswer> {
    if (operator.via === 'insecure') return this.mode === 'insecure' ? { ok: true, operator } : { ok: false, status: 403, error: 'not an operator' };
    const reviews = this.#o.reviews;
    if (this.mode !== 'kubernetes' || !reviews)
      return { ok: false, status: this.mode === 'off' ? 403 : 503, error: this.unavailable ?? 'no Kubernetes access' };
    try {
      const { username, groups, uid, extra } = operator;
      const d = await reviews.reviewAccess({ username, groups, ...(uid ? { uid } : {}), ...(extra ? { extra } : {}) }, permission);
      if (d.allowed) return { ok: true, operator };
      return {
        ok: false,
        status: 403,
        error: `${username} may not ${describePermission(permission)}: no RBAC rule allows it${d.reason ? ` (${d.reason})` : ''}`,
      };
    } catch (err) {
      if (err instanceof ReviewUnavailableError) return { ok: false, status: 503, error: err.message };
      throw err;
    }
  }

  async check(req: Asking, permission: Permission): Promise<AuthAnswer> {
    const who = await this.authenticate(req);
    return who.ok ? this.authorise(who.operator, permission) : who;
  }

  /** Counts a failed sign-in that did not go through authenticate (e.g. an empty form). */
  failed(client: string): void {
    this.#o.limiter.failed(client);
  }

  #failed(client: string, error: string): AuthAnswer {
    this.#o.limiter.failed(client);
    return { ok: false, status: 401, error };
  }

  /** The identity a configured auth proxy vouches for; undefined when the peer is not one, or it names nobody. */
  proxyIdentity(req: Asking): AuthAnswer | undefined {
    const proxy = this.#o.proxy;
    if (!proxy || proxy.cidrs.length === 0 || !req.peer || !cidrContaining(req.peer, proxy.cidrs)) return undefined;
    const user = req.header(proxy.userHeader)?.trim();
    if (!user) return undefined;
    if (!PRINTABLE.test(user)) return { ok: false, status: 401, error: `the auth proxy's ${proxy.userHeader} is not a user name` };
    const groups = (req.header(proxy.groupsHeader) ?? '')
      .split(',')
      .map((g) => g.trim())
      .filter((g) => PRINTABLE.test(g))
      .slice(0, 100);
    if (this.mode === 'off') return { ok: false, status: 403, error: this.unavailable ?? '' };
    return { ok: true, operator: { username: user, groups, via: 'proxy' } };
  }
}
