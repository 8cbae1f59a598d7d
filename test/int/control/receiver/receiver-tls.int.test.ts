import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';
import { helmTemplate, type KObject } from '../../../../scripts/deploy/chart.ts';
import { ensureSecrets } from '../../../../src/control/secrets/ensure.ts';
import { MemoryObjectStore } from '../../../testkit/memory-object-store.ts';
import { secretsSpec } from '../../../support/manifests.ts';
import { freePort } from '../../../../scripts/lib/local-redis.ts';
import { connect } from '../../../../src/adapters/redis/redis.ts';
import { Redis } from 'ioredis';

// Issue 30, item 5: the receiver serves HTTPS from TLS_CERT_FILE/TLS_KEY_FILE (the real process,
// src/control/main.ts), a real `curl --cacert` reaches it while plain HTTP does not, a renewed certificate
// is served without a restart, and plain HTTP is served only when asked for by name.

const dir = mkdtempSync(join(tmpdir(), 'vm-tls-'));
const openssl = (...args: string[]): void => {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
};
/** A CA and a server certificate it signs for 127.0.0.1 and the Service's names, as the chart makes them. */
function issue(ca: string, name: string, cn: string): void {
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${ca}.key`,
    '-out',
    `${ca}.crt`,
    '-days',
    '2',
    '-subj',
    `/CN=${ca}`,
  );
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
  writeFileSync(join(dir, `${name}.ext`), 'subjectAltName=IP:127.0.0.1,DNS:volume-medic.volume-medic.svc\n');
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  );
}

function receiver(env: Record<string, string>) {
  const child = spawn(process.execPath, ['src/control/main.ts'], {
    env: {
      ...process.env,
      VOLUME_MEDIC_TOKEN: 'tls-test-token-0123456789',
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: uniquePrefix('tls'),
      PORT: '0',
      LISTEN_ADDRESS: '127.0.0.1',
      LOG_LEVEL: 'info',
      KUBE_WATCH: 'false',
      SIGNING_KEYS_DIR: TEST_KEYS_DIR,
      OPERATOR_AUTH: 'off',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (text += d.toString()));
  return {
    exited: new Promise<number | null>((r) => child.once('exit', (code) => r(code))),
    output: () => text,
    stop: () => child.kill('SIGTERM'),
  };
}

async function listening(r: ReturnType<typeof receiver>): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const url = /"url":"(https?:\/\/[^"]+)"/.exec(r.output())?.[1];
    if (url) return url;
    if (Date.now() > deadline) throw new Error(`the receiver did not start:\n${r.output()}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const curl = (...args: string[]) => spawnSync('curl', ['-sS', '--max-time', '5', ...args], { encoding: 'utf8', timeout: 15_000 });

/** The Secrets and ConfigMaps the chart's secrets hook Job makes for these rendered objects. */
async function hookMade(objects: KObject[]): Promise<MemoryObjectStore> {
  const store = new MemoryObjectStore();
  await ensureSecrets(secretsSpec(objects)!, store);
  return store;
}

describe.skipIf(spawnSync('curl', ['--version']).error || spawnSync('openssl', ['version']).error)('the receiver over TLS', () => {
  beforeAll(() => {
    issue('ca-a', 'server-a', 'volume-medic');
    issue('ca-b', 'server-b', 'volume-medic');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to start without a certificate unless plain HTTP is asked for by name', async () => {
    const r = receiver({});
    expect(await r.exited).toBe(2);
    expect(r.output()).toMatch(/no TLS certificate: set TLS_CERT_FILE and TLS_KEY_FILE.*ALLOW_PLAINTEXT_HTTP=true/);
    const half = receiver({ TLS_CERT_FILE: join(dir, 'server-a.crt') });
    expect(await half.exited).toBe(2);
    expect(half.output()).toMatch(/set both/);
  }, 30_000);

  it("with the certificate the default chart generates: curl --cacert with the chart's CA reaches it under the Service's name", async () => {
    // What the chart's secrets hook Job makes for the default values (src/control/secrets).
    const store = await hookMade(helmTemplate());
    const secret = store.objects.get('Secret/volume-medic-receiver-tls') as { type: string; data: Record<string, string> } | undefined;
    expect(secret?.type).toBe('kubernetes.io/tls');
    const ca = store.objects.get('ConfigMap/volume-medic-receiver-ca') as { data: Record<string, string> } | undefined;
    for (const [file, value] of [
      ['chart.crt', secret!.data['tls.crt']!],
      ['chart.key', secret!.data['tls.key']!],
    ] as const)
      writeFileSync(join(dir, file), Buffer.from(value, 'base64'));
    writeFileSync(join(dir, 'chart-ca.crt'), ca!.data['ca.crt']!);
    const r = receiver({ TLS_CERT_FILE: join(dir, 'chart.crt'), TLS_KEY_FILE: join(dir, 'chart.key') });
    try {
      const port = new URL(await listening(r)).port;
      const ok = curl(
        '--cacert',
        join(dir, 'chart-ca.crt'),
        '--resolve',
        `volume-medic.volume-medic.svc:${port}:127.0.0.1`,
        `https://volume-medic.volume-medic.svc:${port}/healthz`,
      );
      expect(ok.status, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toEqual({ status: 'ok' });
      // And through `kubectl port-forward` (NOTES): https://localhost:<port>.
      expect(curl('--cacert', join(dir, 'chart-ca.crt'), `https://localhost:${port}/healthz`).status).toBe(0);
      expect(curl(`http://127.0.0.1:${port}/healthz`).stdout).not.toContain('"ok"');
    } finally {
      r.stop();
      await r.exited;
    }
  }, 60_000);

  it('serves HTTPS that curl --cacert trusts; plain HTTP to it fails; a renewed certificate is served without a restart', async () => {
    const cert = join(dir, 'tls.crt');
    const key = join(dir, 'tls.key');
    spawnSync('cp', [join(dir, 'server-a.crt'), cert]);
    spawnSync('cp', [join(dir, 'server-a.key'), key]);
    const r = receiver({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
    try {
      const url = await listening(r);
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const ok = curl('--cacert', join(dir, 'ca-a.crt'), `${url}/healthz`);
      expect(ok.status, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toEqual({ status: 'ok' });
      // Not trusted without the CA; and plain HTTP on the same port gets no answer.
      expect(curl(`${url}/healthz`).status).not.toBe(0);
      const plain = curl(`${url.replace('https:', 'http:')}/healthz`);
      expect(plain.status === 0 && plain.stdout.includes('"ok"')).toBe(false);
      // A webhook with its token over TLS.
      const hook = curl(
        '--cacert',
        join(dir, 'ca-a.crt'),
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '-H',
        'Authorization: Bearer tls-test-token-0123456789',
        '-H',
        'Content-Type: application/json',
        '--data',
        '{"version":"4","status":"resolved","receiver":"x","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","groupKey":"k","truncatedAlerts":0,"alerts":[]}',
        `${url}/v1/alertmanager`,
      );
      expect(hook.stdout).toBe('202');

      // The Secret is renewed (kubelet swaps the files): new connections get the new certificate.
      spawnSync('cp', [join(dir, 'server-b.crt'), `${cert}.new`]);
      spawnSync('cp', [join(dir, 'server-b.key'), `${key}.new`]);
      renameSync(`${key}.new`, key);
      renameSync(`${cert}.new`, cert);
      const deadline = Date.now() + 20_000;
      while (curl('--cacert', join(dir, 'ca-b.crt'), `${url}/healthz`).status !== 0) {
        if (Date.now() > deadline) throw new Error(`the renewed certificate was not served:\n${r.output().slice(-2000)}`);
        await new Promise((res) => setTimeout(res, 500));
      }
      expect(curl('--cacert', join(dir, 'ca-a.crt'), `${url}/healthz`).status).not.toBe(0);
      // Its log lines are written in blocks, at least every second.
      const logged = Date.now() + 5_000;
      while (!/TLS certificate reloaded/.test(r.output()) && Date.now() < logged) await new Promise((res) => setTimeout(res, 200));
      expect(r.output()).toMatch(/TLS certificate reloaded/);
    } finally {
      r.stop();
      await r.exited;
    }
  }, 60_000);
});

describe.skipIf(spawnSync('redis-server', ['--version']).error)('the bundled Redis over TLS, with what the default chart renders', () => {
  it("runs with the chart's certificate and arguments; the processes' connection (REDIS_TLS, the chart's CA) answers, a plain one does not", async () => {
    const objects = helmTemplate();
    const secret = (await hookMade(objects)).objects.get('Secret/volume-medic-redis-tls') as { data: Record<string, string> } | undefined;
    const config = (
      objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'volume-medic-config') as unknown as {
        data: Record<string, string>;
      }
    ).data;
    expect(config['REDIS_TLS']).toBe('true');
    expect(config['REDIS_TLS_CA_FILE']).toBe('/etc/volume-medic/redis-ca/ca.pem');
    const sts = objects.find((o) => o.kind === 'StatefulSet' && o.metadata?.name === 'volume-medic-redis') as unknown as {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    const args = sts.spec.template.spec.containers[0]!.args;
    expect(args.join(' ')).toMatch(/--port 0 --tls-port 6379 --tls-cert-file \/etc\/redis\/tls\/tls.crt/);
    const tlsDir = mkdtempSync(join(tmpdir(), 'vm-redis-tls-'));
    for (const k of ['tls.crt', 'tls.key', 'ca.crt']) writeFileSync(join(tlsDir, k), Buffer.from(secret!.data[k]!, 'base64'));
    const port = await freePort();
    // The chart's TLS arguments, pointed at these files and this port.
    const tlsArgs = [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      join(tlsDir, 'tls.crt'),
      '--tls-key-file',
      join(tlsDir, 'tls.key'),
      '--tls-ca-cert-file',
      join(tlsDir, 'ca.crt'),
      '--tls-auth-clients',
      'no',
    ];
    const server = spawn('redis-server', [...tlsArgs, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tlsDir], {
      stdio: 'ignore',
    });
    const conn = connect({ kind: 'single', url: `redis://localhost:${port}`, tls: { caFile: join(tlsDir, 'ca.crt') } }, 'producer');
    conn.on('error', () => {});
    const plain = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
    });
    plain.on('error', () => {});
    try {
      const deadline = Date.now() + 10_000;
      let answer = '';
      while (answer !== 'PONG') {
        answer = await conn.ping().catch(() => '');
        if (Date.now() > deadline) throw new Error('the TLS Redis did not answer');
        if (answer !== 'PONG') await new Promise((r) => setTimeout(r, 200));
      }
      const plainAnswer = await plain
        .connect()
        .then(
          () => plain.ping(),
          (err: Error) => err.message,
        )
        .catch((err: Error) => err.message);
      expect(plainAnswer).not.toBe('PONG');
    } finally {
      plain.disconnect();
      conn.disconnect();
      server.kill('SIGKILL');
      rmSync(tlsDir, { recursive: true, force: true });
    }
  }, 60_000);
});
