import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, toyRunbook } from '../../../support/controls-harness.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { CHROMIUM, chromiumOrSay } from '../../../support/chromium.ts';

// Issue 20, the dashboard's writes in a real browser (Debian's chromium via playwright-core):
// a form posted from another origin (a page served on another loopback port: same site, so the
// SameSite=Strict cookie IS sent, and only the Origin check stands in the way) is refused; a
// request from the dashboard's own origin without the session's CSRF token is refused; the
// real Approve button works (so the refusals are not a broken form); a session copied before
// sign-out is worth nothing after it; and the /ui answers carry the security headers.

const WEBHOOK_TOKEN = 'dashboard-security-webhook-token-0123';
const silent = createLogger('test', 'silent');

describe('dashboard writes and sessions in headless chromium', () => {
  if (!chromiumOrSay('test/int/control/http/dashboard-security.int.test.ts')) return;

  const prefix = uniquePrefix('uisec');
  let receiver: Receiver;
  let agent: RunbookWorker;
  let ops: Operators;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let attacker: Server;
  let attackerUrl = '';
  let attackerPage = '';
  const toy = toyRunbook(() => ({
    kind: 'steps',
    summary: 'one high-risk step',
    steps: [
      {
        id: 'release-queued-io:3600a0b8',
        description: 'dmsetup message mpatha 0 fail_if_no_path',
        destructive: true,
        risk: 'high',
        file: '/w/release',
        evidence: [{ claim: 'every path is dead', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
      },
    ],
  }));
  let n = 0;
  const parkedJob = async (): Promise<string> => {
    n += 1;
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('uisec-node', 'resolved', `uisec${n}`)]), WEBHOOK_TOKEN);
    const id: string = r.json.accepted[0].id;
    await waitFor('job parked for approval', async () =>
      (await getJson(`${receiver.url}/v1/jobs/${id}/approval`, ops.token('reader'))).state === 'pending' ? true : undefined,
    );
    return id;
  };
  const approvalState = async (id: string): Promise<string> => (await getJson(`${receiver.url}/v1/jobs/${id}/approval`, ops.token('reader'))).state;
  const signIn = async (): Promise<void> => {
    await page.goto(`${receiver.url}/ui/login`);
    await page.fill('input[name=token]', ops.token('dora@example.com'));
    await page.click('button[type=submit]');
    await page.waitForURL(`${receiver.url}/ui/`);
  };
  const csrfOf = async (): Promise<string> => (await page.locator('input[name=_csrf]').first().getAttribute('value')) ?? '';

  beforeAll(async () => {
    const config = (over: Partial<Config> = {}) => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [WEBHOOK_TOKEN], ...fastControls, ...over });
    ops = await startOperators();
    receiver = await startReceiver(config(), { operatorKubeConfig: ops.api.kubeConfig(), log: silent });
    agent = createNodeAgent({
      config: config({ nodeName: 'uisec-node', runbookModes: { 'residual-multipath-cleanup': 'enforce' }, controlsRecheckSeconds: 30 }),
      registry: toy.registry,
      log: silent,
    });
    // The other origin: whatever page the test sets, on another port of the same loopback address.
    attacker = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(attackerPage));
    attacker.listen(0, '127.0.0.1');
    await once(attacker, 'listening');
    attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    profile = mkdtempSync(join(tmpdir(), 'vm-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      timeout: 60_000,
    });
    page = context.pages()[0] ?? (await context.newPage());
  });
  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    attacker?.close();
    await agent?.close();
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
  });

  it('serves every /ui page with CSP (own origin only), X-Frame-Options, nosniff and no Referer; bull-board works without its Google fonts', async () => {
    await parkedJob(); // its node's queue is what the board lists
    // What left the page for another origin and got an answer, and what the browser blocked.
    const external: string[] = [];
    const blocked: string[] = [];
    page.on('requestfinished', (r) => {
      if (!r.url().startsWith(receiver.url) && !r.url().startsWith('data:')) external.push(r.url());
    });
    page.on('console', (m) => {
      if (/violates the following Content Security Policy/.test(m.text())) blocked.push(m.text());
    });
    const login = await page.goto(`${receiver.url}/ui/login`);
    await signIn();
    const board = await page.goto(`${receiver.url}/ui/queues/`);
    await page.waitForSelector('text=vm-node-{uisec-node}', { timeout: 20_000 });
    for (const res of [login, board]) {
      const h = res!.headers();
      expect(h['content-security-policy']).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'",
      );
      expect(h['x-frame-options']).toBe('DENY');
      expect(h['x-content-type-options']).toBe('nosniff');
      expect(h['referrer-policy']).toBe('no-referrer');
    }
    expect(external).toEqual([]);
    expect(blocked.some((b) => b.includes('https://fonts.googleapis.com/'))).toBe(true);
  });

  it('refuses an Approve form posted from another origin, though the browser sent the session cookie and the right CSRF token', async () => {
    const id = await parkedJob();
    await signIn();
    await page.goto(`${receiver.url}/ui/jobs/${id}`);
    const csrf = await csrfOf();
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    attackerPage = `<!doctype html><form method="post" action="${receiver.url}/ui/jobs/${id}/approve"><input name="_csrf" value="${csrf}"><input name="why" value="free disk space!"></form><script>document.forms[0].submit()</script>`;
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url() === `${receiver.url}/ui/jobs/${id}/approve`), page.goto(attackerUrl)]);
    expect(answer.status()).toBe(403);
    expect(await answer.text()).toMatch(/cross-origin request refused \(Origin http:\/\/127\.0\.0\.1:\d+\)/);
    expect(await approvalState(id)).toBe('pending');
    expect(await toy.ran('/w/release')).toBe(false);
  });

  it("refuses a write from the dashboard's own origin without the session's CSRF token, and approves with it", async () => {
    const id = await parkedJob();
    await page.goto(`${receiver.url}/ui/jobs/${id}`);
    // A script on our own origin (say, injected) posting without the token, or with a wrong one.
    const forged = await page.evaluate(async (url) => {
      const statuses: number[] = [];
      for (const body of ['why=x', '_csrf=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&why=x']) {
        statuses.push((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body })).status);
      }
      return statuses;
    }, `/ui/jobs/${id}/approve`);
    expect(forged).toEqual([403, 403]);
    expect(await approvalState(id)).toBe('pending');
    // The page's own Approve button (token in the form): the operator who signed in is recorded.
    await page.fill('form[action$="/approve"] input[name=why]', 'checked on the array');
    await page.check('form[action$="/approve"] input[name=confirm]');
    await Promise.all([page.waitForURL(`${receiver.url}/ui/jobs/${id}`), page.click('form[action$="/approve"] button')]);
    expect(await page.locator('body').innerText()).toMatch(/approval\s+approved by dora@example.com: checked on the array/);
    expect(await approvalState(id)).toBe('approved');
  });

  it('a session copied before sign-out is worth nothing after it', async () => {
    await signIn();
    const [cookie] = await context.cookies(`${receiver.url}/ui/`);
    expect(cookie?.name).toBe('vm_ui');
    const replay = (path: string, accept = 'application/json') =>
      fetch(`${receiver.url}${path}`, { headers: { cookie: `vm_ui=${cookie!.value}`, accept }, redirect: 'manual' });
    expect((await replay('/ui/queues/api/queues')).status).toBe(200);
    await Promise.all([page.waitForURL(`${receiver.url}/ui/login`), page.click('nav button')]);
    expect(await context.cookies(`${receiver.url}/ui/`)).toEqual([]);
    expect((await replay('/ui/queues/api/queues')).status).toBe(401);
    const html = await replay('/ui/', 'text/html');
    expect(html.status).toBe(401);
    expect(await html.text()).toContain('action="/ui/login"');
    // And in the browser: the copied cookie put back is no session.
    await context.addCookies([{ ...cookie! }]);
    await page.goto(`${receiver.url}/ui/`);
    expect(await page.locator('form[action="/ui/login"]').count()).toBe(1);
  });

  it('refuses a sign-in form posted from another origin', async () => {
    await context.clearCookies();
    attackerPage = `<!doctype html><form method="post" action="${receiver.url}/ui/login"><input name="token" value="${ops.token('mallory')}"></form><script>document.forms[0].submit()</script>`;
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url() === `${receiver.url}/ui/login`), page.goto(attackerUrl)]);
    expect(answer.status()).toBe(403);
    expect(await context.cookies(`${receiver.url}/ui/`)).toEqual([]);
  });
});
