import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, toyRunbook } from '../../../support/controls-harness.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { CHROMIUM, chromiumOrSay } from '../../../support/chromium.ts';

// The dashboard in a real headless browser: Debian's chromium driven by playwright-core. The
// network is closed here, so chromium is told not to reach out (no QUIC, no background
// networking, no component updates, no sync) and gets a fresh profile.

const WEBHOOK_TOKEN = 'dashboard-test-token-0123456789';
const silent = createLogger('test', 'silent');
/** The node queue the dashboard shows (a hash-tagged name: braces are escaped in URLs). */
const QN = nodeQueueName('ui-node');

describe('the /ui dashboard in headless chromium', () => {
  if (!chromiumOrSay('test/int/control/http/dashboard.int.test.ts')) return;

  const prefix = uniquePrefix('ui');
  let receiver: Receiver;
  let agent: RunbookWorker;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let parkedId: string;
  let ops: Operators;
  let TOKEN: string;
  const toy = toyRunbook(() => ({
    kind: 'steps',
    summary: 'release queued I/O then flush mpatha',
    steps: [
      {
        id: 'release-queued-io:3600a0b8',
        description: 'dmsetup message mpatha 0 fail_if_no_path',
        destructive: true,
        risk: 'high',
        file: '/w/release',
        evidence: [{ claim: 'every path of mpatha is dead', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
      },
      {
        id: 'flush-map:3600a0b8',
        description: 'multipath -f mpatha',
        destructive: true,
        file: '/w/flush',
        evidence: [{ claim: 'nothing holds mpatha', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' as const }],
      },
    ],
  }));

  beforeAll(async () => {
    const config = (over: Partial<Config> = {}) => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [WEBHOOK_TOKEN], ...fastControls, ...over });
    ops = await startOperators();
    TOKEN = ops.token('dora@example.com');
    receiver = await startReceiver(config(), { operatorKubeConfig: ops.api.kubeConfig() });
    // A long recheck keeps the parked job 'delayed' while the page shows it (with the fast one it
    // is briefly 'active' at each recheck, and under load the page caught it there).
    agent = createNodeAgent({
      config: config({ nodeName: 'ui-node', runbookModes: { 'residual-multipath-cleanup': 'enforce' }, controlsRecheckSeconds: 30 }),
      registry: toy.registry,
      log: silent,
    });
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('ui-node', 'resolved')]), WEBHOOK_TOKEN);
    parkedId = r.json.accepted[0].id;
    await waitFor('job parked for approval', async () =>
      (await getJson(`${receiver.url}/v1/jobs/${parkedId}`, TOKEN)).progress?.parked?.reason === 'approval' ? true : undefined,
    );
    // A second node's job that nobody runs: its queue must be listed too.
    await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('ui-other', 'resolved')]), WEBHOOK_TOKEN);

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
    await agent?.close();
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
  });

  it('asks for a Kubernetes token, signs in through the form, and keeps only a random session id in an HttpOnly SameSite=Strict cookie', async () => {
    await page.goto(`${receiver.url}/ui/queues/`);
    expect(await page.locator('form[action="/ui/login"]').count()).toBe(1);
    await page.fill('input[name=token]', 'not-the-token-at-all');
    await page.click('button[type=submit]');
    await page.waitForSelector('text=the API server did not accept the token');
    // The webhook senders' token does not open the dashboard.
    await page.fill('input[name=token]', WEBHOOK_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForSelector('text=may only post webhooks');
    await page.fill('input[name=token]', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(`${receiver.url}/ui/queues/`);
    const [cookie] = await context.cookies(`${receiver.url}/ui/`);
    expect(cookie).toMatchObject({ name: 'vm_ui', httpOnly: true, sameSite: 'Strict', path: '/ui' });
    expect(cookie?.value).not.toContain(TOKEN);
    expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.goto(`${receiver.url}/ui/`);
    expect(await page.locator('nav').innerText()).toContain('signed in as dora@example.com');
  });

  it('lists the queues in bull-board, and shows a job', async () => {
    await page.goto(`${receiver.url}/ui/queues/`);
    await page.waitForSelector(`text=${QN}`, { timeout: 20_000 });
    await page.waitForSelector(`text=${nodeQueueName('ui-other')}`);
    await page.goto(`${receiver.url}/ui/queues/queue/${encodeURIComponent(QN)}?status=delayed`);
    // bull-board shows the job's id (it may shorten long ids in the card title) and its data.
    await page.waitForSelector(`text=${parkedId.slice(0, 30)}`, { timeout: 20_000 });
    const body = await page.locator('body').innerText();
    expect(body).toContain('residual-multipath-cleanup');
    // Read-only always: the board's own write API is refused whatever the UI shows (with the
    // session's CSRF token and our own origin, so it is the board's refusal, not the guard's).
    const csrf = await page.evaluate(() =>
      fetch('/ui/')
        .then((r) => r.text())
        .then((t) => /name="_csrf" value="([^"]+)"/.exec(t)?.[1] ?? ''),
    );
    const put = await context.request.put(`${receiver.url}/ui/queues/api/queues/${encodeURIComponent(QN)}/pause`, {
      headers: { origin: receiver.url, 'x-csrf-token': csrf },
    });
    expect(put.status()).toBe(405);
  });

  it('lists the incident with its state, mode and why it waits, and opens it in full', async () => {
    await page.goto(`${receiver.url}/ui/`);
    const row = page.locator(`tr[data-job="${parkedId}"]`);
    await row.waitFor();
    expect(await row.innerText()).toMatch(/ui-node\s+residual-multipath-cleanup\s+parked\s+enforce\s+waiting \(approval\)/);
    expect(await page.locator('body').innerText()).toMatch(/1 job\(s\) wait for approval/);
    await row.locator('a', { hasText: 'residual-multipath-cleanup' }).click();
    await page.waitForSelector('text=Plan and steps');
    const text = await page.locator('body').innerText();
    expect(text).toMatch(/approval\s+pending/);
    expect(text).toMatch(/release-queued-io:3600a0b8\s+planned\s*destructive\s*high risk/);
    expect(text).toMatch(/flush-map:3600a0b8/);
  });

  it('refuses a token in the URL: ?token= is no sign-in', async () => {
    await context.clearCookies();
    const denied = await context.request.get(`${receiver.url}/ui/queues/api/queues`, { headers: { accept: 'application/json' } });
    expect(denied.status()).toBe(401);
    await page.goto(`${receiver.url}/ui/?token=${TOKEN}`);
    expect(await page.locator('form[action="/ui/login"]').count()).toBe(1);
    expect(await context.cookies(`${receiver.url}/ui/`)).toEqual([]);
  });
});
