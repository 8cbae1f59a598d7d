import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// The dashboard's sign-in and sessions over plain HTTP (the browser's side is
// dashboard-security.int.test.ts): what is kept server-side, when the cookie is Secure, the auth
// proxy, RBAC at sign-in, and the failed-attempt limit on the sign-in form.

const silent = createLogger('test', 'silent');

describe('dashboard sign-in and sessions', () => {
  const prefix = uniquePrefix('uisess');
  let ops: Operators;
  let redis: Redis;
  const receivers: Receiver[] = [];
  const start = async (over: Partial<Config> = {}): Promise<Receiver> => {
    const r = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: ['ui-session-webhook-token-0123'], ...over }), {
      operatorKubeConfig: ops.api.kubeConfig(),
      log: silent,
    });
    receivers.push(r);
    return r;
  };
  const signIn = (r: Receiver, token: string, headers: Record<string, string> = {}) =>
    fetch(`${r.url}/ui/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: r.url, ...headers },
      body: new URLSearchParams({ token, next: '/ui/' }).toString(),
    });
  const cookieOf = (res: Response): string => /vm_ui=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')?.[1] ?? '';

  beforeAll(async () => {
    ops = await startOperators();
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await ops?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it('keeps the session in Redis under a hash of its id, with the TTL, and no token anywhere', async () => {
    const r = await start({ uiSessionTtlSeconds: 600 });
    const token = ops.token('sam@example.com');
    const res = await signIn(r, token);
    expect(res.status).toBe(200);
    const id = cookieOf(res);
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.headers.get('set-cookie')).toMatch(/^vm_ui=[A-Za-z0-9_-]{43}; Path=\/ui; HttpOnly; SameSite=Strict; Max-Age=600$/);
    const keys = await redis.keys(`${prefix}:vm:ui:session:*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain(id);
    const ttl = await redis.ttl(keys[0]!);
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
    const stored = (await redis.get(keys[0]!)) ?? '';
    expect(JSON.parse(stored)).toMatchObject({ username: 'sam@example.com', via: 'token' });
    expect(stored).not.toContain(token);
    // Each sign-in is a new random session; the cookie's id is what opens it.
    const again = cookieOf(await signIn(r, token));
    expect(again).not.toBe(id);
    expect((await fetch(`${r.url}/ui/queues/api/queues`, { headers: { cookie: `vm_ui=${again}` } })).status).toBe(200);
    // Another id of the same shape (the last character of 32 bytes in base64url is one of 16: 'A' 1 time in 16).
    expect(
      (
        await fetch(`${r.url}/ui/queues/api/queues`, {
          headers: { cookie: `vm_ui=${again.slice(0, -1)}${again.endsWith('A') ? 'E' : 'A'}` },
        })
      ).status,
    ).toBe(401);
  });

  it('marks the cookie Secure for https, believing X-Forwarded-Proto only from TRUSTED_PROXY_CIDRS', async () => {
    const direct = await start();
    const viaUntrusted = await signIn(direct, ops.token('sam@example.com'), { 'x-forwarded-proto': 'https' });
    expect(viaUntrusted.headers.get('set-cookie')).not.toMatch(/Secure/);
    const behindProxy = await start({ trustedProxyCidrs: ['127.0.0.1/32'] });
    const proxied = await signIn(behindProxy, ops.token('sam@example.com'), {
      'x-forwarded-proto': 'https',
      origin: behindProxy.url.replace('http:', 'https:'),
    });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('set-cookie')).toMatch(/; Secure$/);
  });

  it('refuses a sign-in by someone RBAC does not let list jobs, and the webhook token', async () => {
    const r = await start();
    const nobody = await signIn(r, ops.token('nobody', 'no-such-group'));
    expect(nobody.status).toBe(403);
    expect(await nobody.text()).toContain('nobody may not list jobs.volume-medic.io');
    expect(cookieOf(nobody)).toBe('');
    const webhook = await signIn(r, 'ui-session-webhook-token-0123');
    expect(webhook.status).toBe(403);
    expect(cookieOf(webhook)).toBe('');
  });

  it('signs in through a trusted auth proxy, and ignores its headers from anywhere else', async () => {
    const headers = { 'x-forwarded-user': 'pat@example.com', 'x-forwarded-groups': 'volume-medic-viewers', accept: 'text/html' };
    const trusted = await start({ authProxyCidrs: ['127.0.0.1/32'] });
    const page = await fetch(`${trusted.url}/ui/`, { headers });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('signed in as <b>pat@example.com</b>');
    expect(cookieOf(page)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const untrusted = await start({ authProxyCidrs: ['192.0.2.0/24'] });
    const refused = await fetch(`${untrusted.url}/ui/`, { headers });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain('action="/ui/login"');
  });

  it('counts failed sign-ins against the address: 429 with Retry-After after AUTH_FAILURES_PER_MINUTE', async () => {
    const r = await start({ authFailuresPerMinute: 2 });
    expect((await signIn(r, 'wrong-one-0123456789')).status).toBe(401);
    expect((await signIn(r, '')).status).toBe(401);
    const blocked = await signIn(r, ops.token('sam@example.com'));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(cookieOf(blocked)).toBe('');
  });
});
