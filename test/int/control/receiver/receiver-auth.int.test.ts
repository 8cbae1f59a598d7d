import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startReceiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';

// Issue 20, "fail closed": the receiver process (npm run receiver) refuses to start without a
// token, an empty token file included, unless ALLOW_UNAUTHENTICATED=true says so; then it starts,
// warns, and /readyz says that every /v1 route is open.

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function receiver(env: Record<string, string>): { exited: Promise<number | null>; output: () => string; stop: () => void } {
  const child = spawn(process.execPath, ['src/control/main.ts'], {
    env: {
      ...process.env,
      VOLUME_MEDIC_TOKEN: '',
      VOLUME_MEDIC_TOKEN_FILE: '',
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: uniquePrefix('auth'),
      PORT: '0',
      LISTEN_ADDRESS: '127.0.0.1',
      LOG_LEVEL: 'info',
      KUBE_WATCH: 'false',
      SIGNING_KEYS_DIR: TEST_KEYS_DIR,
      ALLOW_PLAINTEXT_HTTP: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (text += d.toString()));
  return { exited: new Promise((r) => child.once('exit', (code) => r(code))), output: () => text, stop: () => child.kill('SIGTERM') };
}

/** The URL the receiver says it listens on, once it says so. */
async function listening(r: ReturnType<typeof receiver>): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const url = /"url":"(http:\/\/[^"]+)"/.exec(r.output())?.[1];
    if (url) return url;
    if (Date.now() > deadline) throw new Error(`the receiver did not start:\n${r.output()}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('the receiver without a token', () => {
  it('exits 2 saying how to set one', async () => {
    const r = receiver({});
    expect(await r.exited).toBe(2);
    expect(r.output()).toMatch(/no token: set VOLUME_MEDIC_TOKEN.*ALLOW_UNAUTHENTICATED=true/);
  }, 20_000);

  it('exits 2 when the token file is empty', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vm-auth-'));
    dirs.push(dir);
    await writeFile(join(dir, 'token'), '\n');
    const r = receiver({ VOLUME_MEDIC_TOKEN_FILE: join(dir, 'token') });
    expect(await r.exited).toBe(2);
    expect(r.output()).toMatch(/an empty file counts as none/);
  }, 20_000);

  it('starts only with ALLOW_UNAUTHENTICATED=true, warns, and /readyz says every route is open', async () => {
    const r = receiver({ ALLOW_UNAUTHENTICATED: 'true' });
    try {
      const url = await listening(r);
      expect(r.output()).toMatch(/"level":50.*ALLOW_UNAUTHENTICATED=true and no token/);
      const ready = (await (await fetch(`${url}/readyz`)).json()) as { auth?: string };
      expect(ready.auth).toMatch(/none: no token, ALLOW_UNAUTHENTICATED/);
    } finally {
      r.stop();
      await r.exited;
    }
  }, 30_000);

  it('exits 2 for OPERATOR_AUTH=insecure unless ALLOW_UNAUTHENTICATED=true says so too', async () => {
    const r = receiver({ VOLUME_MEDIC_TOKEN: 'receiver-auth-token-0123456789', OPERATOR_AUTH: 'insecure' });
    expect(await r.exited).toBe(2);
    expect(r.output()).toMatch(/OPERATOR_AUTH=insecure .* needs ALLOW_UNAUTHENTICATED=true/);
  }, 20_000);

  it('with a token, /readyz says nothing about authentication being off', async () => {
    const r = receiver({ VOLUME_MEDIC_TOKEN: 'receiver-auth-token-0123456789' });
    try {
      const url = await listening(r);
      expect(((await (await fetch(`${url}/readyz`)).json()) as { auth?: string }).auth).toBeUndefined();
    } finally {
      r.stop();
      await r.exited;
    }
  }, 30_000);
});

describe('the dashboard with a malformed session cookie', () => {
  it('answers as for no session (the login page), never a 500', async () => {
    const prefix = uniquePrefix('uicookie');
    const rec = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: ['ui-cookie-token-0123456789'] }));
    try {
      for (const cookie of ['vm_ui=%E0%A4%A', 'vm_ui=%', `vm_ui=${'%zz'.repeat(1000)}`, 'vm_ui']) {
        const r = await fetch(`${rec.url}/ui/`, { headers: { cookie }, redirect: 'manual' });
        expect(r.status, cookie).toBeLessThan(500);
        expect(r.status, cookie).not.toBe(200);
      }
    } finally {
      await rec.close();
      await dropPrefix(prefix);
    }
  });
});
