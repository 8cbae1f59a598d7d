import express from 'express';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { listen } from '../../../../src/control/receiver/listen.ts';
import { testConfig } from '../../../support/config.ts';

// The receiver keeps agents' connections open for HTTP_KEEP_ALIVE_SECONDS (40 min by default).
// Stopping it must not wait for that: a connection whose request was still being answered when
// close() was called is closed once its answer went out, and close() resolves at once after.

const get = (url: string, agent: Agent): Promise<number> =>
  new Promise((resolve, reject) => {
    const r = request(`${url}/slow`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', reject);
    r.end();
  });

describe('the receiver stops with kept connections', () => {
  it('closes a kept connection that was busy at close() as soon as it is idle, not after the keep-alive timeout', async () => {
    const app = express();
    app.get('/slow', async (_req, res) => {
      await sleep(500);
      res.send('ok');
    });
    const config = testConfig({ httpKeepAliveSeconds: 2400 });
    const l = await listen(config, app, createLogger('test', 'silent'));
    const agent = new Agent({ keepAlive: true });
    try {
      expect(await get(l.url, agent)).toBe(200);
      const busy = get(l.url, agent);
      await sleep(100);
      const t0 = performance.now();
      await l.close();
      const took = performance.now() - t0;
      expect(await busy).toBe(200);
      expect(took).toBeLessThan(3_000);
    } finally {
      agent.destroy();
    }
  });
});
