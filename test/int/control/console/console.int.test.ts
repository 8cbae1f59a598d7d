import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeholderReportKey, writePlaceholderReport } from '../../../../src/adapters/jobstore/placeholder-reports.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { PermanentError } from '../../../../src/core/errors.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { JobEventRecorder } from '../../../../src/adapters/kube/job-events.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import type { RunbookRegistry } from '../../../../workers/engine/registry.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls } from '../../../support/controls-harness.ts';
import { startOperators, VIEWERS, type Operators } from '../../../testkit/operators.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { CHROMIUM, chromiumOrSay } from '../../../support/chromium.ts';
import { apiCallOf, uncoveredByRbac } from '../../../support/kube-objects.ts';
import { recordName } from '../../../../src/control/console/record-name.ts';

// Issue 23, the on-call console's "Must show", in headless chromium (Debian's, via
// playwright-core): sign in with a token the TokenReview fake accepts; a parked job appears
// without a reload within 2 s of being parked; its page shows the planned argv and the evidence;
// approve with a reason and the job runs, the audit trail naming the verified user; a user
// without the verb sees the buttons disabled and gets 403 when forcing; reject; filters; a phone
// viewport without horizontal scroll; the fleet overview (a node without an agent, sorting, paging,
// a phone); and not one request leaves the origin.
// CONSOLE_SCREENSHOTS=<dir> also writes the screenshots docs/console.md shows (docs/screenshots).

const SHOTS = process.env['CONSOLE_SCREENSHOTS'];

const WEBHOOK_TOKEN = 'console-webhook-token-0123456789';
const silent = createLogger('test', 'silent');
const ARGV = ['dmsetup', 'message', 'mpatha', '0', 'fail_if_no_path'];

type Step = PlannedStep & { file: string; argv?: string[] };

/** residual-multipath-cleanup as a toy: a high-risk step that runs a real argv on a fake host, then a flush. */
function toy(): { registry: RunbookRegistry; ran: (file: string) => Promise<boolean>; host: FakeHost } {
  const host = new FakeHost().on(['dmsetup'], { exitCode: 0, stdout: 'ok' }).on(['multipath'], { exitCode: 0, stdout: 'flushed' });
  const def = (node: string): RunbookDefinition<'residual-multipath-cleanup', null, Step> => ({
    runbook: 'residual-multipath-cleanup',
    observe: async () => null,
    plan: () => ({
      kind: 'steps',
      summary: `release queued I/O of mpatha on ${node}, then flush it`,
      steps: [
        {
          id: 'release-queued-io:3600a0b8',
          description: 'stop queueing I/O on mpatha (every path is dead)',
          destructive: true,
          risk: 'high',
          file: `/w/${node}/release`,
          argv: ARGV,
          evidence: [
            {
              claim: 'every path of mpatha is dead',
              source: 'multipath -ll mpatha',
              observedAt: new Date().toISOString(),
              status: 'holds',
              detail: '2 paths, both failed faulty',
            },
          ],
        },
        {
          id: 'flush-map:3600a0b8',
          description: 'flush mpatha',
          destructive: true,
          file: `/w/${node}/flush`,
          argv: ['multipath', '-f', 'mpatha'],
          evidence: [{ claim: 'nothing holds mpatha', source: '/sys/block/dm-3/holders', observedAt: new Date().toISOString(), status: 'holds' }],
        },
      ],
    }),
    steps: {
      isDone: async (s, h) => (await h.readFile(s.file)) !== null,
      apply: async (s, h) => {
        // A node whose /w/<node>/broken exists fails its steps (the retry tests).
        if ((await h.readFile(`/w/${node}/broken`)) !== null) throw new PermanentError('map in use');
        if (s.argv) await h.run(s.argv);
        await h.writeFile(s.file, 'done');
      },
    },
    verify: async () => ({ ok: true, checks: [] }),
  });
  return {
    registry: { 'residual-multipath-cleanup': (job, ctx) => runRunbook(def(job.target.node), job, ctx, { host, stateDir: '/state' }) },
    ran: async (file) => (await host.readFile(file)) !== null,
    host,
  };
}

describe('the on-call console in headless chromium', () => {
  if (!chromiumOrSay('test/int/control/console/console.int.test.ts')) return;

  const prefix = uniquePrefix('console');
  let receiver: Receiver;
  const agents: RunbookWorker[] = [];
  let ops: Operators;
  let browser: Browser;
  let admin: BrowserContext;
  let page: Page;
  const requests: string[] = [];
  const runbook = toy();
  let n = 0;

  const alert = async (node: string): Promise<string> => {
    n += 1;
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved', `console${n}`)]), WEBHOOK_TOKEN);
    return r.json.accepted[0].id;
  };
  const parked = (id: string) =>
    waitFor(`job ${id} parked for approval`, async () => {
      const j = await getJson(`${receiver.url}/v1/jobs/${id}`, ops.token('reader'));
      return j.state === 'delayed' && j.progress?.parked?.reason === 'approval' ? (j.progress.parked.since as string) : undefined;
    });
  const approvalState = async (id: string): Promise<string> => (await getJson(`${receiver.url}/v1/jobs/${id}/approval`, ops.token('reader'))).state;
  const newContext = async (): Promise<BrowserContext> => {
    const c = await browser.newContext();
    c.on('request', (r) => requests.push(r.url()));
    return c;
  };
  const signIn = async (p: Page, token: string): Promise<void> => {
    await p.goto(`${receiver.url}/ui/login`);
    await p.fill('input[name=token]', token);
    await Promise.all([p.waitForURL(`${receiver.url}/ui/`), p.click('button[type=submit]')]);
  };
  const shot = async (p: Page, name: string): Promise<void> => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  };

  beforeAll(async () => {
    const config = (over: Partial<Config> = {}) => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [WEBHOOK_TOKEN], ...fastControls, ...over });
    ops = await startOperators();
    // With the Lease on the fake, the receiver keeps the jobs' VolumeRemediation records there, and a job's page names its record.
    receiver = await startReceiver(config({ records: true, recordSyncSeconds: 1 }), {
      operatorKubeConfig: ops.api.kubeConfig(),
      lease: { kubeConfig: ops.api.kubeConfig(), namespace: 'volume-medic' },
      log: silent,
    });
    for (const node of ['console-a', 'console-b', 'console-c']) {
      // A long recheck keeps a parked job 'delayed' while a page shows it.
      agents.push(
        createNodeAgent({
          config: config({ nodeName: node, runbookModes: { 'residual-multipath-cleanup': 'enforce' }, controlsRecheckSeconds: 30 }),
          registry: runbook.registry,
          log: silent,
          // Job Events to the fake API server, which the receiver's console lists back.
          events: new JobEventRecorder({
            events: restApis(new KubeRest({ server: ops.api.url, token: () => 'agent-token' })).events,
            instance: node,
          }),
        }),
      );
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
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
    admin = await newContext();
    page = await admin.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    for (const a of agents) await a.close();
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
  });

  it('signs in with a token the TokenReview fake accepts, and shows a job parked meanwhile within 2 s, without a reload', async () => {
    await signIn(page, ops.token('dora@example.com'));
    expect(await page.locator('header nav').innerText()).toContain('signed in as dora@example.com');
    // A reload would lose this.
    await page.evaluate(() => {
      (globalThis as unknown as { stillHere: boolean }).stillHere = true;
    });
    const id = await alert('console-a');
    const since = await parked(id);
    const row = page.locator(`tr[data-job="${id}"][data-state="parked"]`);
    await row.waitFor({ timeout: 2_000 });
    const after = Date.now() - Date.parse(since);
    expect(after).toBeLessThan(2_000);
    expect(await page.evaluate(() => (globalThis as unknown as { stillHere?: boolean }).stillHere)).toBe(true);
    expect(await row.innerText()).toMatch(/console-a\s+residual-multipath-cleanup\s+parked\s+enforce\s+waiting \(approval\)/);
    // The banner names it with how long it has waited.
    await page.waitForSelector('.banner >> text=/1 job\\(s\\) wait for approval/');
    await expect.poll(() => page.locator('.banner .waited').first().innerText()).toMatch(/^waiting \d+ s/);
    await shot(page, 'incidents');
  });

  it("shows the parked job's signal, its evidence with the verdicts, and the exact argv it would run", async () => {
    await page.locator('tr[data-state="parked"] a', { hasText: 'residual-multipath-cleanup' }).first().click();
    await page.waitForSelector('h2#plan-h');
    const text = await page.locator('main').innerText();
    expect(text).toMatch(/What started it\s+alertmanager: KubeNodeNotReady/);
    expect(text).toMatch(/HOLDS\s+every path of mpatha is dead\s+2 paths, both failed faulty\s+multipath -ll mpatha/);
    const argv = await page.locator('pre.argv').allInnerTexts();
    expect(argv).toContain('$ dmsetup message mpatha 0 fail_if_no_path');
    expect(argv).toContain('$ multipath -f mpatha');
    expect(text).toMatch(/approval\s+pending/);
    expect(text).toMatch(/Audit trail[\s\S]*console-a\s+approval-requested/);
    // Its VolumeRemediation, and the command that reads it; the record's status links back here.
    const id = decodeURIComponent(page.url().split('/ui/jobs/')[1]!);
    const name = recordName(nodeQueueName('console-a'), id);
    expect(await page.locator(`dd[data-record="${name}"]`).innerText()).toBe(`kubectl get volumeremediation ${name} -n volume-medic -o yaml`);
    const record = await waitFor('its record, parked', async () => {
      const r = ops.api.get('volume-medic.io/v1alpha1', 'VolumeRemediation', name, 'volume-medic');
      return r?.['status']?.phase === 'Parked' ? r : undefined;
    });
    expect(record['status']).toMatchObject({ jobState: 'parked', reason: 'approval' });
    await shot(page, 'incident');
  });

  it('approves with a reason: the job runs, and the audit trail names the verified user', async () => {
    const id = decodeURIComponent(page.url().split('/ui/jobs/')[1]!);
    // Without a reason the browser does not even send it (and the server would answer 400).
    await page.check('form.action-approve input[name=confirm]');
    await page.click('form.action-approve button');
    expect(await approvalState(id)).toBe('pending');
    await page.fill('form.action-approve input[name=why]', 'paths are gone for good; array decommissioned');
    await Promise.all([page.waitForURL(`${receiver.url}/ui/jobs/${id}`), page.click('form.action-approve button')]);
    expect(await approvalState(id)).toBe('approved');
    // The page follows the job live until it has run.
    await page.waitForSelector('dd[data-state="completed"]', { timeout: 15_000 });
    expect(await runbook.ran('/w/console-a/release')).toBe(true);
    const approve = page.locator('tr[data-action="approve"]');
    expect(await approve.innerText()).toMatch(/dora@example\.com\s+approve\s+paths are gone for good; array decommissioned/);
    const ran = await page.locator('main').innerText();
    expect(ran).toMatch(/release-queued-io:3600a0b8 done/);
    // The Events the agent wrote on the Node, listed back from the API server (the page follows them live).
    await page.waitForSelector('table.events tr[data-reason="RemediationSucceeded"]', { timeout: 10_000 });
    const events = await page.locator('table.events tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-reason')));
    // The wait for approval is an Event of its own, between the start and the success.
    expect(events).toEqual(['RemediationStarted', 'RemediationAwaitingApproval', 'RemediationSucceeded']);
    expect(await page.locator('table.events tr[data-reason="RemediationAwaitingApproval"]').innerText()).toMatch(
      new RegExp(
        `Warning\\s+RemediationAwaitingApproval\\s+Node/console-a\\s+1\\s+waiting for an operator's approval of release-queued-io:3600a0b8, flush-map:3600a0b8: volume-medic approve ${id}`,
      ),
    );
    expect(await page.locator('table.events tr[data-reason="RemediationSucceeded"]').innerText()).toMatch(
      new RegExp(`Normal\\s+RemediationSucceeded\\s+Node/console-a\\s+1\\s+succeeded: .*\\(job ${id}, residual-multipath-cleanup, enforce\\)`),
    );
    expect(await page.locator('section[aria-labelledby=related-h]').innerText()).toMatch(/node\s+console-a/);
    // Read back with one list per page, within what src/adapters/kube/rbac.ts (and so the chart) grants the receiver.
    const lists = ops.api.requestsTo('GET', '/apis/events.k8s.io/v1/');
    expect(lists.length).toBeGreaterThan(0);
    expect(lists.map((r) => apiCallOf(r)?.call)).toContain('events.k8s.io/events list');
    expect(uncoveredByRbac(lists, 'receiver')).toEqual([]);
    expect(lists[0]!.query['fieldSelector']).toBe('regarding.kind=Node,regarding.name=console-a,reportingController=volume-medic');
    expect(ran).toMatch(/\$ dmsetup message mpatha 0 fail_if_no_path — exit 0/);
  });

  it('disables the buttons of a user without the RBAC verb, and answers 403 when they force it', async () => {
    const id = await alert('console-b');
    await parked(id);
    const viewer = await newContext();
    const p = await viewer.newPage();
    await signIn(p, ops.token('vic@example.com', VIEWERS));
    await p.goto(`${receiver.url}/ui/jobs/${id}`);
    expect(await p.locator('form.action-approve button').isDisabled()).toBe(true);
    expect(await p.locator('form.action-reject button').isDisabled()).toBe(true);
    expect(await p.locator('form.action-pause button').isDisabled()).toBe(true);
    expect(await p.locator('form.action-approve').innerText()).toContain('vic@example.com may not: needs approve jobs.volume-medic.io');
    // Forced: the page's own CSRF token, our own origin, a reason and the confirmation; RBAC still says no.
    const forced = await p.evaluate(async (url) => {
      // No DOM types in this project: the page's document, loosely.
      const doc = (globalThis as unknown as { document: { querySelector(s: string): { value: string } } }).document;
      const csrf = doc.querySelector('input[name=_csrf]').value;
      const body = new URLSearchParams({ _csrf: csrf, why: 'just do it', confirm: 'yes' });
      const r = await fetch(url, { method: 'POST', body });
      return { status: r.status, text: await r.text() };
    }, `/ui/jobs/${id}/approve`);
    expect(forced.status).toBe(403);
    expect(forced.text).toMatch(/approve jobs\.volume-medic\.io/);
    expect(await approvalState(id)).toBe('pending');
    await p.setViewportSize({ width: 390, height: 844 });
    await shot(p, 'incident-viewer-phone');
    await viewer.close();
  });

  it('rejects with a reason: the job is refused and nothing runs', async () => {
    const id = (await getJson(`${receiver.url}/v1/approvals`, ops.token('reader'))).approvals.find((a: { node?: string }) => a.node === 'console-b')
      .jobId as string;
    await page.goto(`${receiver.url}/ui/jobs/${id}`);
    await page.fill('form.action-reject input[name=why]', 'the array is coming back: vendor ticket 4711');
    await Promise.all([page.waitForURL(`${receiver.url}/ui/jobs/${id}`), page.click('form.action-reject button')]);
    expect(await approvalState(id)).toBe('rejected');
    await page.waitForSelector('dd[data-state="failed"]', { timeout: 15_000 });
    expect(await page.locator('tr[data-action="reject"]').innerText()).toMatch(/dora@example\.com\s+reject\s+the array is coming back: vendor ticket 4711/);
    // Each interlock a row, as a step's evidence: what, the verdict, who saw it, when.
    const row = page.locator('table.interlocks tr[data-verdict="refused"]').first();
    expect(await row.locator('td[data-label=interlock]').innerText()).toMatch(/approval rejected by dora@example\.com/);
    expect(await row.locator('td[data-label=verdict]').innerText()).toBe('refused');
    expect(await row.locator('td[data-label="seen by"]').innerText()).toMatch(/console-b/);
    expect(await row.locator('td[data-label=when]').innerText()).not.toBe('unknown');
    // What the alert itself said, not only our signal line.
    expect(await page.locator('dl.sender').innerText()).toMatch(/summary\s+Node is not ready\.\s+description\s+console-b has been unready/);
    expect(await runbook.ran('/w/console-b/release')).toBe(false);
  });

  it('pauses a node and resumes it from the banner, confirmed, under the verified user', async () => {
    const id = await alert('console-b');
    await parked(id);
    await page.goto(`${receiver.url}/ui/jobs/${id}`);
    await page.fill('form.action-pause input[name=why]', 'maintenance on the SAN');
    await Promise.all([page.waitForURL(`${receiver.url}/ui/jobs/${id}`), page.click('form.action-pause button')]);
    expect(await page.locator('#node-h + p').innerText()).toMatch(/Paused by dora@example\.com/);
    await page.goto(`${receiver.url}/ui/`);
    const banner = page.locator('.banner', { hasText: 'Node console-b paused' });
    expect(await banner.innerText()).toMatch(/by dora@example\.com .*: maintenance on the SAN/);
    await banner.locator('input[name=why]').fill('SAN is back');
    await banner.locator('input[name=confirm]').check();
    await Promise.all([page.waitForURL(`${receiver.url}/ui/`), banner.locator('button').click()]);
    expect(await page.locator('.banner', { hasText: 'Node console-b paused' }).count()).toBe(0);
    const entries: { action: string; by: string; target: string }[] = (await getJson(`${receiver.url}/v1/controls/audit`, ops.token('reader'))).audit;
    expect(entries.filter((e) => e.target === 'node/console-b').map((e) => `${e.action} ${e.by}`)).toEqual([
      'resume dora@example.com',
      'pause dora@example.com',
    ]);
  });

  it('pauses a runbook everywhere from the incidents view, confirmed: its new job waits, and goes on when resumed from the banner', async () => {
    await page.goto(`${receiver.url}/ui/`);
    await page.click('#pause-switches summary');
    const form = page.locator('form.action-pause', { has: page.locator('select[name=runbook]') });
    await form.locator('select[name=runbook]').selectOption('residual-multipath-cleanup');
    await form.locator('input[name=why]').fill('multipath firmware bug, vendor case 99');
    // Unconfirmed, the browser does not send it.
    await form.locator('button').click();
    expect((await getJson(`${receiver.url}/v1/controls`, ops.token('reader'))).pauses.runbooks).toEqual({});
    await form.locator('input[name=confirm]').check();
    await Promise.all([page.waitForURL(`${receiver.url}/ui/`), form.locator('button').click()]);
    const banner = page.locator('.banner', { hasText: 'Runbook residual-multipath-cleanup paused' });
    expect(await banner.innerText()).toMatch(/everywhere by dora@example\.com .*: multipath firmware bug, vendor case 99/);
    const id = await alert('console-c');
    const held = await waitFor(`job ${id} held by the pause`, async () => {
      const j = await getJson(`${receiver.url}/v1/jobs/${id}`, ops.token('reader'));
      return j.progress?.parked?.reason === 'paused' ? j.progress.parked : undefined;
    });
    expect(held.why).toMatch(/^runbook residual-multipath-cleanup paused by dora@example\.com/);
    const viewer = await newContext();
    const p = await viewer.newPage();
    await signIn(p, ops.token('vic@example.com', VIEWERS));
    expect(await p.locator('.banner', { hasText: 'Runbook residual-multipath-cleanup paused' }).locator('button').isDisabled()).toBe(true);
    await viewer.close();
    await banner.locator('input[name=why]').fill('firmware fixed');
    await banner.locator('input[name=confirm]').check();
    await Promise.all([page.waitForURL(`${receiver.url}/ui/`), banner.locator('button').click()]);
    expect(await page.locator('.banner', { hasText: 'Runbook residual-multipath-cleanup paused' }).count()).toBe(0);
    await parked(id);
    const entries: { action: string; by: string; target: string }[] = (await getJson(`${receiver.url}/v1/controls/audit`, ops.token('reader'))).audit;
    expect(entries.filter((e) => e.target === 'runbook/residual-multipath-cleanup').map((e) => `${e.action} ${e.by}`)).toEqual([
      'resume dora@example.com',
      'pause dora@example.com',
    ]);
    await post(`${receiver.url}/v1/jobs/${id}/reject`, { why: 'test done' }, ops.token('dora@example.com'));
  });

  it('filters by node, runbook, state and mode', async () => {
    await page.goto(`${receiver.url}/ui/`);
    await page.fill('form.filters input[name=node]', 'console-a');
    await Promise.all([page.waitForURL(/node=console-a/), page.click('form.filters button')]);
    const nodes = await page.locator('tr[data-job] td[data-label=node]').allInnerTexts();
    expect(nodes.length).toBeGreaterThan(0);
    expect(new Set(nodes)).toEqual(new Set(['console-a']));
    await page.goto(`${receiver.url}/ui/?state=parked`);
    const states = await page.locator('tr[data-job]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-state')));
    expect(states.length).toBeGreaterThan(0);
    expect(new Set(states)).toEqual(new Set(['parked']));
    await page.selectOption('form.filters select[name=mode]', 'dry-run');
    await Promise.all([page.waitForURL(/mode=dry-run/), page.click('form.filters button')]);
    expect(await page.locator('main').innerText()).toContain('No incidents match these filters');
    await page.goto(`${receiver.url}/ui/?runbook=rbd-unmap`);
    expect(await page.locator('tr[data-job]').count()).toBe(0);
    await page.goto(`${receiver.url}/ui/?runbook=residual-multipath-cleanup&mode=enforce&state=completed`);
    expect(await page.locator('tr[data-job]').count()).toBe(1);
    expect((await page.goto(`${receiver.url}/ui/?state=bogus`))!.status()).toBe(400);
  });

  it("retries a failed job: a viewer sees Retry disabled and gets 403 forcing it; an operator's retry is a new job that appears and runs", async () => {
    await runbook.host.writeFile('/w/console-c/broken', 'yes');
    const id = await alert('console-c');
    await parked(id);
    expect((await post(`${receiver.url}/v1/jobs/${id}/approve`, { why: 'go' }, ops.token('dora@example.com'))).status).toBe(200);
    await waitFor(`job ${id} failed`, async () =>
      (await getJson(`${receiver.url}/v1/jobs/${id}`, ops.token('reader'))).state === 'failed' ? true : undefined,
    );
    await runbook.host.unlink('/w/console-c/broken');

    const viewer = await newContext();
    const p = await viewer.newPage();
    await signIn(p, ops.token('vic@example.com', VIEWERS));
    await p.goto(`${receiver.url}/ui/jobs/${id}`);
    expect(await p.locator('form.action-retry button').isDisabled()).toBe(true);
    expect(await p.locator('form.action-retry').innerText()).toContain('vic@example.com may not: needs retry jobs.volume-medic.io');
    const forced = await p.evaluate(async (url) => {
      const doc = (globalThis as unknown as { document: { querySelector(s: string): { value: string } } }).document;
      const body = new URLSearchParams({ _csrf: doc.querySelector('input[name=_csrf]').value, why: 'let me', confirm: 'yes' });
      const r = await fetch(url, { method: 'POST', body });
      return { status: r.status, text: await r.text() };
    }, `/ui/jobs/${id}/retry`);
    expect(forced.status).toBe(403);
    expect(forced.text).toMatch(/retry jobs\.volume-medic\.io/);
    await viewer.close();

    await page.goto(`${receiver.url}/ui/jobs/${id}`);
    expect(await page.locator('main').innerText()).toMatch(/Retry\s+A new job for the same work, sealed afresh/);
    await page.fill('form.action-retry input[name=why]', 'the map was released by hand');
    await page.check('form.action-retry input[name=confirm]');
    await Promise.all([page.waitForURL(`${receiver.url}/ui/jobs/${id}.r1`), page.click('form.action-retry button')]);
    expect(await page.locator('dl.facts').first().innerText()).toMatch(new RegExp(`retry\\s+first retry of ${id}`));
    expect(await page.locator('tr[data-action="retry"]').innerText()).toMatch(
      new RegExp(`dora@example\\.com\\s+retry\\s+retry of ${id}: the map was released by hand`),
    );
    // A new job: its high-risk step is approved again, here, and then it runs.
    await page.waitForSelector('form.action-approve');
    await page.fill('form.action-approve input[name=why]', 'same evidence, map released');
    await page.check('form.action-approve input[name=confirm]');
    await Promise.all([page.waitForURL(`${receiver.url}/ui/jobs/${id}.r1`), page.click('form.action-approve button')]);
    await page.waitForSelector('dd[data-state="completed"]', { timeout: 15_000 });
    expect(await runbook.ran('/w/console-c/flush')).toBe(true);
    await shot(page, 'incident-retried');
    // The failed job links to it; the incidents list shows it.
    await page.goto(`${receiver.url}/ui/jobs/${id}`);
    expect(await page.locator('#retry-h + p').innerText()).toBe(`Retried as ${id}.r1 (completed).`);
    await page.goto(`${receiver.url}/ui/?node=console-c`);
    expect(await page.locator(`tr[data-job="${id}.r1"]`).getAttribute('data-state')).toBe('completed');
  });

  it('filters by time on the server: since, until and last, kept in the URL', async () => {
    const before = (await getJson(`${receiver.url}/v1/jobs?limit=1000`, ops.token('reader'))).jobs.length as number;
    const t1 = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    const id = await alert('console-a');
    const rows = async (query: string): Promise<string[]> => {
      await page.goto(`${receiver.url}/ui/?${query}`);
      return page.locator('tr[data-job]').evaluateAll((trs) => trs.map((t) => t.getAttribute('data-job') ?? ''));
    };
    expect(await rows(`since=${encodeURIComponent(t1)}`)).toEqual([id]);
    const older = await rows(`until=${encodeURIComponent(t1)}`);
    expect(older).not.toContain(id);
    expect(older.length).toBe(before);
    expect((await rows('last=1h')).length).toBe(before + 1);
    expect(await rows(`until=${encodeURIComponent(new Date(Date.parse(t1) - 3_600_000).toISOString())}`)).toEqual([]);
    // The form: "last 24h" goes into the URL (a bookmark stays relative), with the other filters.
    await page.goto(`${receiver.url}/ui/?node=console-a`);
    await page.selectOption('form.filters select[name=last]', '24h');
    await Promise.all([page.waitForURL(/last=24h/), page.click('form.filters button')]);
    expect(page.url()).toMatch(/node=console-a/);
    const shown = await page.locator('tr[data-job] td[data-label=node]').allInnerTexts();
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown)).toEqual(new Set(['console-a']));
    expect((await page.goto(`${receiver.url}/ui/?since=yesterday`))!.status()).toBe(400);
    expect((await page.goto(`${receiver.url}/ui/?last=3w`))!.status()).toBe(400);
  });

  it('fits a 390x844 phone without horizontal scroll', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${receiver.url}/ui/?state=completed`);
    const job = await page.locator('tr[data-job] a', { hasText: 'residual' }).first().getAttribute('href');
    for (const path of ['/ui/', job!]) {
      await page.goto(`${receiver.url}${path}`);
      await page.waitForSelector('#live');
      const { scroll, client } = await page.evaluate(() => {
        const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
        return { scroll: root.scrollWidth, client: root.clientWidth };
      });
      expect(scroll).toBeLessThanOrEqual(client);
      await shot(page, path === '/ui/' ? 'incidents-phone' : 'incident-phone');
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('shows the fleet: a node with jobs and no agent as missing, live, with its queue depth', async () => {
    await page.goto(`${receiver.url}/ui/fleet`);
    // console-z has no agent: its job waits, and no worker checks its queue.
    await alert('console-z');
    const z = page.locator('tr[data-node="console-z"]');
    await z.waitFor({ timeout: 10_000 });
    expect(await z.getAttribute('data-agent')).toBe('missing');
    expect(await z.locator('td[data-label="queue depth"]').innerText()).toBe('1');
    expect(await page.locator('.banner', { hasText: 'with jobs and no agent' }).innerText()).toMatch(/^1 node\(s\) with jobs and no agent/);
    // The agents that run are seen (their presence keys), whether or not they have open jobs; read
    // again until every agent of this suite has started.
    await expect
      .poll(
        async () => {
          await page.goto(`${receiver.url}/ui/fleet?show=all&sort=node`);
          return page.locator('tr[data-node]').evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-node')} ${r.getAttribute('data-agent')}`));
        },
        { timeout: 15_000, interval: 1_000 },
      )
      .toEqual(['console-a seen', 'console-b seen', 'console-c seen', 'console-z missing']);
    await shot(page, 'fleet');
    // The incidents list says it too: the row why, the page a banner.
    await page.goto(`${receiver.url}/ui/?node=console-z`);
    const row = page.locator('tr[data-job]').first();
    expect(await row.getAttribute('data-waits')).toBe('no agent');
    expect(await row.locator('td[data-label=outcome]').innerText()).toMatch(/^waiting \(no agent\)/);
    expect(await row.locator('td[data-label=summary]').innerText()).toMatch(/^no node agent on console-z has shown itself lately/);
    expect(await page.locator('.banner', { hasText: 'with jobs and no agent' }).innerText()).toMatch(/^1 node\(s\) with jobs and no agent/);
  });

  it('sorts the fleet by a column header, both ways, and pages it on the server', async () => {
    await page.goto(`${receiver.url}/ui/fleet?show=all`);
    const nodes = () => page.locator('tr[data-node]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-node')));
    await Promise.all([page.waitForURL(/sort=node/), page.click('th a:text-is("node")')]);
    expect(await nodes()).toEqual(['console-a', 'console-b', 'console-c', 'console-z']);
    expect(await page.locator('th[aria-sort]').innerText()).toContain('node ▲');
    await Promise.all([page.waitForURL(/dir=desc/), page.click('th a:has-text("node")')]);
    expect(await nodes()).toEqual(['console-z', 'console-c', 'console-b', 'console-a']);
    await Promise.all([page.waitForURL(/sort=agent/), page.click('th a:has-text("agent")')]);
    expect((await nodes())[0]).toBe('console-z');
    // One row a page: the server sends one, and "next" walks the rest in order.
    await page.goto(`${receiver.url}/ui/fleet?show=all&sort=node&limit=1`);
    const walked: (string | null)[] = [];
    for (let i = 0; i < 5; i++) {
      walked.push(...(await nodes()));
      const next = page.locator('a[rel=next]');
      if (!(await next.count())) break;
      await Promise.all([page.waitForURL(/offset=/), next.click()]);
    }
    expect(walked).toEqual(['console-a', 'console-b', 'console-c', 'console-z']);
    expect((await page.goto(`${receiver.url}/ui/fleet?sort=bogus`))!.status()).toBe(400);
  });

  it('fits the fleet on a 390x844 phone without horizontal scroll', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${receiver.url}/ui/fleet?show=all`);
    await page.waitForSelector('tr[data-node]');
    const { scroll, client } = await page.evaluate(() => {
      const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
      return { scroll: root.scrollWidth, client: root.clientWidth };
    });
    expect(scroll).toBeLessThanOrEqual(client);
    await shot(page, 'fleet-phone');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('lists the Local PV placeholders the agents report on the fleet page, with what holds each and the command to run before an uninstall', async () => {
    const redis = new Redis(redisUrl());
    try {
      await writePlaceholderReport(redis, prefix, nodeQueueName('console-a'), {
        version: 1,
        node: 'console-a',
        at: new Date().toISOString(),
        placeholders: [
          {
            pv: 'local-pv-7',
            path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4',
            loop: 'loop101',
            since: '2026-12-01T03:00:00.000Z',
            attached: true,
            diskBack: true,
            heldBy: ['pid 4242 (postgres) has it open'],
          },
        ],
        unreadable: [],
      });
      const row = page.locator('#placeholders tr[data-pv="local-pv-7"]');
      await expect
        .poll(
          async () => {
            await page.goto(`${receiver.url}/ui/fleet`);
            return row.count();
          },
          { timeout: 15_000, interval: 1_000 },
        )
        .toBe(1);
      expect(await row.locator('td[data-label=node]').innerText()).toBe('console-a');
      expect(await row.locator('td[data-label="loop device"]').innerText()).toBe('/dev/loop101');
      expect(await row.locator('td[data-label="disk back"]').innerText()).toBe('yes');
      expect(await row.locator('td[data-label="held by"]').innerText()).toBe('pid 4242 (postgres) has it open');
      expect(await page.locator('#placeholders').innerText()).toContain('volume-medic prepare-uninstall');
    } finally {
      await redis.del(placeholderReportKey(prefix, nodeQueueName('console-a')));
      redis.disconnect();
    }
  });

  it('trial mode says so on /ui/ itself, and the webhook token is refused in one line naming the token to use', async () => {
    const trial = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        tokens: [WEBHOOK_TOKEN],
        operatorAuth: 'insecure',
        allowUnauthenticated: true,
      }),
      { log: silent },
    );
    // Its own context: these requests go to the trial receiver, not the one the origin check watches.
    const ctx = await browser.newContext();
    try {
      const p = await ctx.newPage();
      await p.goto(`${trial.url}/ui/`);
      expect(await p.locator('body').innerText()).toContain('OPERATOR_AUTH=insecure: any token, or none, signs in.');
      // Under Kubernetes sign-in, the webhook token is recognised and refused, in one line.
      const q = await ctx.newPage();
      await q.goto(`${receiver.url}/ui/login`);
      await q.fill('input[name=token]', WEBHOOK_TOKEN);
      await q.click('form button[type=submit], form input[type=submit]');
      const note = (await q.locator('.error, .note, [role=alert]').first().innerText()).trim();
      expect(note.split('\n')).toHaveLength(1);
      expect(note).toMatch(/VOLUME_MEDIC_TOKEN/);
      expect(note).toMatch(/Kubernetes/);
    } finally {
      await ctx.close();
      await trial.close();
    }
  });

  it('sent not one request outside its own origin', () => {
    expect(requests.length).toBeGreaterThan(20);
    expect(requests.filter((u) => !u.startsWith(`${receiver.url}/`))).toEqual([]);
  });
});
