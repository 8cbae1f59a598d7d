import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_ROUTES, WEBHOOK_PATHS } from '../../../../src/control/auth/permissions.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, toyRunbook } from '../../../support/controls-harness.ts';
import { kubeConfigFor } from '../../../../src/adapters/kube/kube-config.ts';
import { VIEWERS, startOperators, type Operators } from '../../../testkit/operators.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';

// Issue 20, "separate roles": the webhook token opens the webhook routes and nothing else; an
// operator is a Kubernetes identity (TokenReview) whose RBAC verb on volume-medic.io is asked of
// the cluster (SubjectAccessReview), here the wire-protocol fake API server; what the audit
// records is that identity, whatever a body says.

const WEBHOOK_TOKEN = 'operator-identity-webhook-token-0123';
const silent = createLogger('test', 'silent');

const call = async (url: string, method: string, headers: Record<string, string>, body?: unknown) => {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json, headers: res.headers };
};
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const concrete = (path: string) => path.replace(':id', 'residual_0123456789abcdef');

describe('operator identity on the /v1 routes', () => {
  const prefix = uniquePrefix('opid');
  let ops: Operators;
  const receivers: Receiver[] = [];
  const agents: RunbookWorker[] = [];
  // The route walks below send every operator route a missing or wrong token (over 20 routes now),
  // past the default failed-auth budget of 20 per address; the budget has its own test at the end.
  const config = (over: Partial<Config> = {}) =>
    testConfig({
      redisUrl: redisUrl(),
      queuePrefix: prefix,
      tokens: [WEBHOOK_TOKEN],
      ...fastControls,
      authFailuresPerMinute: 500,
      ...over,
    });
  const start = async (over: Partial<Config> = {}, withKube = true): Promise<Receiver> => {
    const r = await startReceiver(config(over), withKube ? { operatorKubeConfig: ops.api.kubeConfig(), log: silent } : { log: silent });
    receivers.push(r);
    return r;
  };
  let receiver: Receiver;

  beforeAll(async () => {
    ops = await startOperators();
    receiver = await start();
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    for (const r of receivers) await r.close();
    await ops?.close();
    await dropPrefix(prefix);
  });

  it('the webhook token gets 403 on every operator route, saying it may only post webhooks', async () => {
    expect(OPERATOR_ROUTES.length).toBeGreaterThanOrEqual(15);
    for (const route of OPERATOR_ROUTES) {
      const r = await call(`${receiver.url}${concrete(route.path)}`, route.method, bearer(WEBHOOK_TOKEN), route.method === 'POST' ? {} : undefined);
      expect(r.status, `${route.method} ${route.path}`).toBe(403);
      expect(r.json.error, `${route.method} ${route.path}`).toMatch(/webhook token .* may only post webhooks/);
    }
    // It still opens what it is for.
    const posted = await post(`${receiver.url}${WEBHOOK_PATHS[0]}`, alertmanagerBody([nodeNotReadyAlert('opid-webhook', 'resolved')]), WEBHOOK_TOKEN);
    expect(posted.status).toBe(202);
    // And an operator is not a webhook sender.
    expect((await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([]), ops.token('alice'))).status).toBe(401);
  });

  it('every operator route answers an operator with the verb (not 401/403), and 401 without a token or with an unknown one', async () => {
    for (const route of OPERATOR_ROUTES) {
      const ok = await call(`${receiver.url}${concrete(route.path)}`, route.method, bearer(ops.token('alice')), route.method === 'POST' ? {} : undefined);
      expect([401, 403], `${route.method} ${route.path}: ${JSON.stringify(ok.json)}`).not.toContain(ok.status);
      expect((await call(`${receiver.url}${concrete(route.path)}`, route.method, {})).status, route.path).toBe(401);
    }
    const unknown = await call(`${receiver.url}/v1/jobs`, 'GET', bearer('not-a-kubernetes-token-at-all'));
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toMatch(/Bearer/);
    expect(unknown.json.error).toMatch(/did not accept the token/);
    expect(unknown.json.error).not.toContain('not-a-kubernetes-token-at-all');
  });

  it('a user without the RBAC verb gets 403 naming the verb; with it, the same call passes', async () => {
    const viewer = ops.token('victor', VIEWERS);
    expect((await call(`${receiver.url}/v1/jobs`, 'GET', bearer(viewer))).status).toBe(200);
    for (const [path, body, verb] of [
      ['/v1/modes', { runbook: 'residual-multipath-cleanup', mode: 'enforce' }, 'update modes.volume-medic.io'],
      ['/v1/pause', {}, 'create pauses.volume-medic.io'],
      ['/v1/jobs/residual_0123456789abcdef/approve', {}, 'approve jobs.volume-medic.io'],
      ['/v1/placeholders/release', {}, 'release placeholders.volume-medic.io'],
    ] as const) {
      const r = await call(`${receiver.url}${path}`, 'POST', bearer(viewer), body);
      expect(r.status, path).toBe(403);
      expect(r.json.error).toBe(`victor may not ${verb}: no RBAC rule allows it`);
    }
    // The SubjectAccessReview asked what RBAC needs to know: user, groups, group/resource/verb.
    const sar = ops.api.requests
      .filter((q) => q.path === '/apis/authorization.k8s.io/v1/subjectaccessreviews')
      .map((q) => (q.body as any).spec)
      .find((s) => s.user === 'victor' && s.resourceAttributes.resource === 'modes');
    expect(sar).toMatchObject({
      user: 'victor',
      groups: [VIEWERS, 'system:authenticated'],
      resourceAttributes: { group: 'volume-medic.io', resource: 'modes', verb: 'update' },
    });
  });

  it('an approval records the TokenReview user name, whatever `by` the body says', async () => {
    const toy = toyRunbook(() => ({
      kind: 'steps',
      summary: 'one high-risk step',
      steps: [
        {
          id: 'release',
          description: 'toy',
          destructive: true,
          risk: 'high',
          file: '/w/release',
          evidence: [{ claim: 'safe', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
        },
      ],
    }));
    agents.push(
      createNodeAgent({
        config: config({ nodeName: 'opid-node', runbookModes: { 'residual-multipath-cleanup': 'enforce' } }),
        registry: toy.registry,
        log: silent,
      }),
    );
    const posted = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('opid-node', 'resolved')]), WEBHOOK_TOKEN);
    const id: string = posted.json.accepted[0].id;
    const alice = ops.token('alice@example.com');
    await waitFor('job parked for approval', async () =>
      (await call(`${receiver.url}/v1/jobs/${id}/approval`, 'GET', bearer(alice))).json.state === 'pending' ? true : undefined,
    );

    const r = await call(`${receiver.url}/v1/jobs/${id}/approve`, 'POST', bearer(alice), { by: 'mallory', why: 'looked at it' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ state: 'approved', decidedBy: 'alice@example.com', why: 'looked at it' });
    const audit = (await call(`${receiver.url}/v1/controls/audit`, 'GET', bearer(alice))).json.audit;
    expect(audit).toContainEqual(expect.objectContaining({ action: 'approve', target: `job/${id}`, by: 'alice@example.com' }));
    expect(JSON.stringify(audit)).not.toContain('mallory');
    await waitFor('job ran after approval', async () => ((await toy.ran('/w/release')) ? true : undefined));
    // The TokenReview the receiver asked for carried the operator's token (and the fake answered who it is).
    expect(ops.api.requests.some((q) => q.path === '/apis/authentication.k8s.io/v1/tokenreviews' && (q.body as any).spec.token === alice)).toBe(true);
  });

  it('remembers an accepted token for OPERATOR_TOKEN_CACHE_SECONDS instead of asking again each request', async () => {
    const cached = await start({ operatorTokenCacheSeconds: 60, operatorAccessCacheSeconds: 60 });
    const t = ops.token('carol');
    const reviews = () => ops.api.requests.filter((q) => q.path.endsWith('/tokenreviews') && (q.body as any).spec.token === t).length;
    const before = reviews();
    for (let i = 0; i < 5; i++) expect((await call(`${cached.url}/v1/controls`, 'GET', bearer(t))).status).toBe(200);
    expect(reviews() - before).toBe(1);
    const uncached = await start({ operatorTokenCacheSeconds: 0, operatorAccessCacheSeconds: 0 });
    for (let i = 0; i < 3; i++) expect((await call(`${uncached.url}/v1/controls`, 'GET', bearer(t))).status).toBe(200);
    expect(reviews() - before).toBe(4);
  });

  describe('an auth proxy', () => {
    const user = { 'x-forwarded-user': 'pat@example.com', 'x-forwarded-groups': 'volume-medic-admins,other' };

    it('is believed from a configured proxy address, and still authorised with SubjectAccessReview', async () => {
      const trusted = await start({ authProxyCidrs: ['127.0.0.1/32', '::1/128'] });
      const r = await call(`${trusted.url}/v1/pause`, 'POST', user, { node: 'opid-proxy', why: 'proxy test' });
      expect(r.status).toBe(200);
      expect(r.json.recordedAs).toBe('pat@example.com');
      await call(`${trusted.url}/v1/resume`, 'POST', user, { node: 'opid-proxy' });
      const noGroup = await call(`${trusted.url}/v1/pause`, 'POST', { 'x-forwarded-user': 'pat@example.com' }, { node: 'opid-proxy' });
      expect(noGroup.status).toBe(403);
      expect(noGroup.json.error).toMatch(/pat@example.com may not create pauses/);
    });

    it('is ignored from any other address: the request is as if the headers were not there', async () => {
      const untrusted = await start({ authProxyCidrs: ['192.0.2.0/24'] });
      const r = await call(`${untrusted.url}/v1/pause`, 'POST', user, { node: 'opid-proxy' });
      expect(r.status).toBe(401);
      const withToken = await call(`${untrusted.url}/v1/pause`, 'POST', { ...user, ...bearer(ops.token('quinn')) }, { node: 'opid-proxy-2' });
      expect(withToken.json.recordedAs).toBe('quinn');
      await call(`${untrusted.url}/v1/resume`, 'POST', bearer(ops.token('quinn')), { node: 'opid-proxy-2' });
      // And no proxy configured at all: the same.
      expect((await call(`${receiver.url}/v1/pause`, 'POST', user, { node: 'opid-proxy' })).status).toBe(401);
    });
  });

  it('after AUTH_FAILURES_PER_MINUTE failed attempts an address gets 429 with Retry-After, a right token included', async () => {
    const limited = await start({ authFailuresPerMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await call(`${limited.url}/v1/jobs`, 'GET', bearer(`guess-${i}-0123456789abcdef`))).status).toBe(401);
    const blocked = await call(`${limited.url}/v1/jobs`, 'GET', bearer(ops.token('alice')));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The webhook routes share the budget: their bearer check is refused too.
    expect((await post(`${limited.url}/v1/alertmanager`, alertmanagerBody([]), WEBHOOK_TOKEN)).status).toBe(429);
    // Another receiver (another budget) with the same traffic: the webhook token's failures count too.
    const other = await start({ authFailuresPerMinute: 2 });
    for (let i = 0; i < 2; i++) expect((await post(`${other.url}/v1/alertmanager`, alertmanagerBody([]), `wrong-${i}-0123456789abcdef`)).status).toBe(401);
    expect((await post(`${other.url}/v1/alertmanager`, alertmanagerBody([]), WEBHOOK_TOKEN)).status).toBe(429);
  });

  it('without Kubernetes access operator routes answer 503 saying why; OPERATOR_AUTH=off answers 403', async () => {
    const noKube = await startReceiver(config(), { log: silent, operatorKubeConfig: kubeConfigFor('http://127.0.0.1:1') });
    receivers.push(noKube);
    const r = await call(`${noKube.url}/v1/jobs`, 'GET', bearer(ops.token('alice')));
    expect(r.status).toBe(503);
    expect(r.json.error).toMatch(/TokenReview failed/);
    const off = await start({ operatorAuth: 'off' });
    const o = await call(`${off.url}/v1/jobs`, 'GET', bearer(ops.token('alice')));
    expect(o.status).toBe(403);
    expect(o.json.error).toMatch(/OPERATOR_AUTH=off/);
    expect(((await (await fetch(`${off.url}/readyz`)).json()) as { operators: string }).operators).toMatch(/off/);
  });
});
