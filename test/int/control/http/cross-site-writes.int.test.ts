import { mkdtempSync, rmSync } from 'node:fs';
import { BREAKER_SLOTS_PATH } from '../../../../src/core/controls/breaker-wire.ts';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/core/config/schema.ts';
import { OPERATOR_ROUTES, WEBHOOK_PATHS } from '../../../../src/control/auth/permissions.ts';
import { ENROL_PATH } from '../../../../src/core/trust/enrolment-wire.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { CHROMIUM, chromiumOrSay } from '../../../support/chromium.ts';

// Issue 30, item 6: a page on another site makes the browser send a "simple" POST (a form with
// enctype text/plain, urlencoded or multipart: no CORS preflight) to a state-changing route.
// Whatever the operator-auth mode, and whether or not the request carries credentials the
// receiver accepts, it is refused before anything acts on it (src/control/http/cross-site.ts).

const TOKEN = 'cross-site-webhook-token-0123456789';
const EVIL = 'http://evil.example';

/** Every state-changing route: the operator POST routes, the webhooks, enrolment, agents' breaker slots, the dashboard's forms. */
const WRITE_ROUTES = [
  ...OPERATOR_ROUTES.filter((r) => r.method === 'POST').map((r) => r.path.replace(':id', 'abc_0123456789abcdef')),
  ...WEBHOOK_PATHS,
  ENROL_PATH,
  BREAKER_SLOTS_PATH,
];

/** The body a text/plain form sends: `name=value`, shaped so that it parses as JSON. */
const FORM_BODY = '{"runbook":"residual-multipath-cleanup","mode":"enforce","why":"x","node":"n1","pad":"=x"}';

describe('no cross-site writes, in every operator-auth mode', () => {
  const prefix = uniquePrefix('xsite');
  let ops: Operators;
  const receivers: Receiver[] = [];
  const start = async (over: Partial<Config>): Promise<Receiver> => {
    const r = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], ...over }), {
      operatorKubeConfig: ops.api.kubeConfig(),
    });
    receivers.push(r);
    return r;
  };
  beforeAll(async () => {
    ops = await startOperators();
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await ops?.close();
    await dropPrefix(prefix);
  });

  const modes: [string, Partial<Config>, () => Record<string, string>][] = [
    ['insecure', { operatorAuth: 'insecure', allowUnauthenticated: true }, () => ({})],
    ["kubernetes (an admin's token)", { operatorAuth: 'kubernetes' }, () => ({ authorization: `Bearer ${ops.token('kim')}` })],
    [
      'kubernetes behind a trusted auth proxy',
      { operatorAuth: 'kubernetes', authProxyCidrs: ['127.0.0.1/32', '::1/128'] },
      () => ({ 'x-forwarded-user': 'pat@example.com', 'x-forwarded-groups': 'volume-medic-admins' }),
    ],
    ['off', { operatorAuth: 'off' }, () => ({})],
  ];

  for (const [mode, config, credentials] of modes) {
    it(`${mode}: a text/plain POST a browser marks as cross-site gets 403 on every write route; the same write as JSON from a non-browser is not refused`, async () => {
      const r = await start(config);
      for (const path of WRITE_ROUTES) {
        const creds = WEBHOOK_PATHS.includes(path) ? { authorization: `Bearer ${TOKEN}` } : credentials();
        // What Chromium sends for a cross-site <form enctype="text/plain"> (and a no-cors fetch).
        for (const marks of [
          { origin: EVIL, 'sec-fetch-site': 'cross-site' },
          { origin: EVIL },
          { 'sec-fetch-site': 'cross-site' },
          { origin: 'null', 'sec-fetch-site': 'cross-site' },
          { 'sec-fetch-site': 'same-site' },
        ]) {
          const res = await fetch(`${r.url}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain', ...marks, ...creds },
            body: FORM_BODY,
          });
          expect(res.status, `${mode} ${path} ${JSON.stringify(marks)}`).toBe(403);
          expect(((await res.json()) as { error: string }).error).toMatch(/cross-(origin|site) request refused/);
        }
        // No browser marks, but a body that is not JSON: 415, not parsed as JSON.
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
          const res = await fetch(`${r.url}${path}`, { method: 'POST', headers: { 'content-type': type, ...creds }, body: FORM_BODY });
          expect(res.status, `${mode} ${path} ${type}`).toBe(415);
        }
      }
      // The positive control: the legitimate path (JSON, no browser marks; or from our own origin) is not refused here.
      const legit = await fetch(`${r.url}/v1/pause`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...credentials() },
        body: JSON.stringify({ node: `xsite-${receivers.length}`, why: 'test' }),
      });
      expect(legit.status, mode).toBe(mode === 'off' ? 403 : 200);
      if (mode !== 'off') {
        const own = await fetch(`${r.url}/v1/resume`, {
          method: 'POST',
          headers: { 'content-type': 'application/json; charset=utf-8', origin: r.url, 'sec-fetch-site': 'same-origin', ...credentials() },
          body: JSON.stringify({ node: `xsite-${receivers.length}` }),
        });
        expect(own.status, mode).toBe(200);
      }
      // A webhook sender that names no Content-Type (some do) is still served (a Buffer body: fetch adds none).
      const untyped = await fetch(`${r.url}/v1/alertmanager`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: Buffer.from(
          JSON.stringify({
            version: '4',
            status: 'resolved',
            receiver: 'x',
            groupLabels: {},
            commonLabels: {},
            commonAnnotations: {},
            externalURL: 'http://am',
            groupKey: 'k',
            truncatedAlerts: 0,
            alerts: [],
          }),
        ),
      });
      expect(untyped.status).not.toBe(415);
      expect(untyped.status).toBeLessThan(500);
    });
  }

  describe('in a real browser', () => {
    if (!chromiumOrSay('test/int/control/http/cross-site-writes.int.test.ts')) return;
    it('a page on another site posting an enforce form to /v1/modes (OPERATOR_AUTH=insecure) is refused and changes nothing', async () => {
      const r = await start({ operatorAuth: 'insecure', allowUnauthenticated: true });
      let attackerPage = '';
      const attacker: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(attackerPage));
      attacker.listen(0, '127.0.0.1');
      await once(attacker, 'listening');
      const profile = mkdtempSync(join(tmpdir(), 'vm-chromium-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        timeout: 60_000,
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
      });
      try {
        const page = context.pages()[0] ?? (await context.newPage());
        // The input's name and value join with '=' into a JSON body.
        attackerPage = `<!doctype html><form method="post" enctype="text/plain" action="${r.url}/v1/modes"><input name='{"runbook":"residual-multipath-cleanup","mode":"enforce","why":"free disk space","pad":"' value='"}'></form><script>document.forms[0].submit()</script>`;
        const [answer] = await Promise.all([
          page.waitForResponse((res) => res.url() === `${r.url}/v1/modes`),
          page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`),
        ]);
        expect(answer.status()).toBe(403);
        expect(await answer.text()).toMatch(/cross-origin request refused/);
        const controls = (await (await fetch(`${r.url}/v1/controls`)).json()) as {
          modes: { overrides: { runbooks: Record<string, unknown> } };
        };
        expect(controls.modes.overrides.runbooks['residual-multipath-cleanup']).toBeUndefined();
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
        attacker.close();
      }
    });
  });
});
