import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/core/config/load.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';

// A password inside a URL never reaches a log or an error (issue 20, item 7): a malformed
// REDIS_URL with a password used to be echoed whole in the start-up error.

const SECRET = 's3cretPassw0rd';

function start(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      VOLUME_MEDIC_TOKEN: 'redact-test-token-0123456789',
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
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

describe('credentials in URLs', () => {
  it.each([
    `redis://volume-medic-receiver:${SECRET}@redis:notaport`,
    `redis:/volume-medic-receiver:${SECRET}@redis`,
    `redis://volume-medic-receiver:${SECRET} x@redis:6379`,
    `http://volume-medic-receiver:${SECRET}@redis:6379`,
  ])('a malformed REDIS_URL (%s) is refused without its password', (url) => {
    let message = '';
    try {
      loadConfig('receiver', { REDIS_URL: url });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/REDIS_URL/);
    expect(message).not.toContain(SECRET);
    expect(message).toContain('***@redis');
  });

  it('the receiver refuses to start on one, exit 2, and prints no password', async () => {
    const r = await start(['src/control/main.ts'], { REDIS_URL: `redis://volume-medic-receiver:${SECRET}@redis:notaport` });
    expect(r.code).toBe(2);
    expect(r.output).toMatch(/REDIS_URL/);
    expect(r.output).not.toContain(SECRET);
  });

  it('a log line that carries a URL with a password (a message, a field, an error) shows it hidden', async () => {
    const script = `
      import { createLogger } from '${new URL('../../../../src/adapters/observability/logger.ts', import.meta.url).pathname}';
      for (const buffered of [false, true]) {
        const log = createLogger('t', 'info', { buffered });
        const url = 'rediss://volume-medic-node-agent:${SECRET}@redis.example:6380';
        log.error({ err: new Error('cannot connect to ' + url), target: url }, 'redis at ' + url + ' refused');
        log.flush();
      }`;
    const r = await start(['--input-type=module', '-e', script], {});
    expect(r.code).toBe(0);
    const lines = r.output.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l.match(/rediss:\/\/\*\*\*@redis\.example:6380/g)?.length).toBe(4);
    expect(r.output).not.toContain(SECRET);
  });
});
