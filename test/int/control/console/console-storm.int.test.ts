import { Worker } from 'bullmq';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { workerConnection } from '../../../../src/adapters/redis/redis.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { CHROMIUM, chromiumOrSay } from '../../../support/chromium.ts';
import { testConfig } from '../../../support/config.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// Issue 33, "a storm reads as one incident": 1,000 nodes come back from a power loss at once and
// each gets a residual-multipath-cleanup job. The incidents view shows one storm line with the
// right counts by state (every job waits: no agent runs here), not 1,000 rows; its link opens the
// node rows; and the line's counts change live when some jobs finish, without a reload.

const NODES = 1_000;
const TOKEN = 'console-storm-webhook-token-0123456789';
const node = (i: number): string => `storm-${String(i).padStart(4, '0')}`;

describe('a storm in the incidents view', () => {
  if (!chromiumOrSay('console-storm.int.test.ts')) return;
  const prefix = uniquePrefix('storm');
  let receiver: Receiver;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    receiver = await startReceiver(
      testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], operatorAuth: 'insecure', allowUnauthenticated: true }),
      { log: createLogger('test', 'silent') },
    );
    // Unrelated work beside the storm, as a real cluster has: another runbook on two nodes.
    for (const n of ['calm-1', 'calm-2']) {
      const r = await fetch(`${receiver.url}/v1/placeholders/release`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ node: n, pv: `pv-${n}`, path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', force: true, why: 'disk replaced' }),
      });
      expect(r.status).toBe(202);
    }
    for (let b = 0; b < NODES; b += 50) {
      const r = await post(
        `${receiver.url}/v1/alertmanager`,
        alertmanagerBody(Array.from({ length: 50 }, (_, i) => nodeNotReadyAlert(node(b + i), 'resolved'))),
        TOKEN,
      );
      expect(r.status).toBe(202);
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      timeout: 60_000,
    });
    page = await (await browser.newContext()).newPage();
    // OPERATOR_AUTH=insecure: signing in needs no token.
    await page.goto(`${receiver.url}/ui/login`);
    await Promise.all([page.waitForURL(`${receiver.url}/ui/`), page.click('button[type=submit]')]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await dropPrefix(prefix);
  });

  const stateCount = async (state: string): Promise<number> => {
    const chip = page.locator(`table.storms tr[data-storm] li[data-state="${state}"] b`);
    return (await chip.count()) ? Number(await chip.first().innerText()) : 0;
  };

  it('shows the storm as one line with its counts, and not its 1,000 rows', async () => {
    await page.goto(`${receiver.url}/ui/`);
    const storm = page.locator('table.storms tr[data-storm]');
    expect(await storm.count()).toBe(1);
    expect(await storm.getAttribute('data-storm')).toBe('residual-multipath-cleanup');
    expect(await storm.getAttribute('data-jobs')).toBe(String(NODES));
    expect(await storm.getAttribute('data-nodes')).toBe(String(NODES));
    expect(await storm.locator('td[data-label=scope]').innerText()).toBe(`${NODES} nodes, ${NODES} jobs`);
    expect(await stateCount('waiting')).toBe(NODES);
    // The rows below are the jobs outside the storm: the two calm nodes'.
    const nodes = await page.locator('tr[data-job] td[data-label=node]').allInnerTexts();
    expect(nodes.sort()).toEqual(['calm-1', 'calm-2']);
  });

  it("opens into the storm's node rows, with why they wait", async () => {
    await Promise.all([page.waitForURL(/runbook=residual-multipath-cleanup/), page.locator('table.storms a', { hasText: 'Node rows' }).click()]);
    const rows = page.locator('tr[data-job]');
    expect(await rows.count()).toBe(50);
    const shown = await page.locator('tr[data-job] td[data-label=node]').allInnerTexts();
    expect(shown.every((n) => /^storm-\d{4}$/.test(n))).toBe(true);
    expect(await rows.first().getAttribute('data-waits')).toBe('no agent');
    expect(await page.locator('a[rel=next], a', { hasText: /older/i }).count()).toBeGreaterThan(0);
  });

  it("updates the storm's counts live when jobs finish", async () => {
    await page.goto(`${receiver.url}/ui/`);
    expect(await stateCount('completed')).toBe(0);
    // Agents come back on ten nodes and run their jobs.
    const workers = Array.from(
      { length: 10 },
      (_, i) =>
        new Worker(nodeQueueName(node(i)), async () => ({ outcome: 'nothing-to-do' }), {
          connection: workerConnection(redisUrl()),
          prefix,
        }),
    );
    try {
      await expect.poll(() => stateCount('completed'), { timeout: 30_000, interval: 500 }).toBe(10);
      expect(await stateCount('waiting')).toBe(NODES - 10);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
    }
  });
});
