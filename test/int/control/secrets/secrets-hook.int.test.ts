import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get as httpsGet, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmTemplate } from '../../../../scripts/deploy/chart.ts';
import { freePort } from '../../../../scripts/lib/local-redis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { ensureSecrets } from '../../../../src/control/secrets/ensure.ts';
import { kubeStore } from '../../../../src/control/secrets/store.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { secretsSpec } from '../../../support/manifests.ts';

// The chart's secrets hook (src/control/secrets) against an API server (the fake one, over HTTP, as the
// hook's KubeRest talks to the real one), and what it makes in real use: the receiver's
// certificate in a real TLS handshake checked against the CA ConfigMap the senders get, and the
// bundled Redis's certificate and ACL file in a real redis-server, where a process's generated
// user connects with its generated URL's password.

const NS = 'volume-medic';
let api: FakeKubeApi;
let rest: KubeRest;
const dir = mkdtempSync(join(tmpdir(), 'vm-secrets-hook-'));
const spec = secretsSpec(helmTemplate())!;
const decoded = async (kind: 'secrets' | 'configmaps', name: string): Promise<Record<string, string>> => {
  const o = await rest.get<{ data: Record<string, string> }>(`/api/v1/namespaces/${NS}/${kind}/${name}`);
  return kind === 'secrets' ? Object.fromEntries(Object.entries(o.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])) : o.data;
};

beforeAll(async () => {
  api = await startFakeKubeApi();
  rest = new KubeRest({ server: api.url, token: () => 'hook-token' });
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the secrets hook against an API server', () => {
  it('creates each Secret and ConfigMap once; a second run (the next upgrade) only reads', async () => {
    const first = await ensureSecrets(spec, kubeStore(rest, NS));
    expect(first.filter((r) => r.outcome === 'created')).toHaveLength(13);
    const writes = api.requests.filter((r) => r.method !== 'GET').length;
    const second = await ensureSecrets(spec, kubeStore(rest, NS));
    expect(second.every((r) => r.outcome === 'kept')).toBe(true);
    expect(api.requests.filter((r) => r.method !== 'GET').length).toBe(writes);
    // Every request was to one of the names its Role allows (create is by collection).
    for (const r of api.requests) expect(r.path).toMatch(new RegExp(`^/api/v1/namespaces/${NS}/(secrets|configmaps)(/volume-medic-[a-z-]+)?$`));
  });

  it("the receiver's certificate serves HTTPS that a client with the CA ConfigMap trusts, for localhost and 127.0.0.1", async () => {
    const tls = await decoded('secrets', 'volume-medic-receiver-tls');
    const { 'ca.crt': ca } = await decoded('configmaps', 'volume-medic-receiver-ca');
    expect(ca).toBe(tls['ca.crt']);
    const server: Server = createServer({ cert: tls['tls.crt'], key: tls['tls.key'] }, (_q, s) => s.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const fetchOk = (servername: string, trust?: string) =>
        new Promise<string>((resolve, reject) => {
          httpsGet({ host: '127.0.0.1', port, path: '/', servername, ...(trust ? { ca: trust } : {}) }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => {
              body += c.toString();
            });
            res.on('end', () => resolve(body));
          }).on('error', reject);
        });
      expect(await fetchOk('localhost', ca)).toBe('ok');
      expect(await fetchOk('volume-medic.volume-medic.svc', ca)).toBe('ok');
      await expect(fetchOk('localhost')).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
      await expect(fetchOk('elsewhere.example', ca)).rejects.toThrow(/altnames|Hostname/i);
    } finally {
      server.close();
    }
  });

  it("the bundled Redis runs on its certificate and ACL file; the receiver's user connects over TLS with its password and is held to its prefix", async () => {
    if (spawnSync('redis-server', ['--version']).error) {
      console.warn('SKIPPED the Redis part: redis-server is not installed (.ci/run installs redis-server)');
      return;
    }
    const tls = await decoded('secrets', 'volume-medic-redis-tls');
    const acl = await decoded('secrets', 'volume-medic-redis-acl');
    const user = await decoded('secrets', 'volume-medic-redis-receiver');
    for (const [f, v] of Object.entries({
      'tls.crt': tls['tls.crt']!,
      'tls.key': tls['tls.key']!,
      'ca.crt': tls['ca.crt']!,
      'users.acl': acl['users.acl']!,
    }))
      writeFileSync(join(dir, f), v);
    const port = await freePort();
    const proc: ChildProcess = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--tls-cert-file',
        join(dir, 'tls.crt'),
        '--tls-key-file',
        join(dir, 'tls.key'),
        '--tls-ca-cert-file',
        join(dir, 'ca.crt'),
        '--tls-auth-clients',
        'no',
        '--aclfile',
        join(dir, 'users.acl'),
      ],
      { stdio: 'ignore' },
    );
    const redis = new Redis({
      host: '127.0.0.1',
      port,
      username: user['username'],
      password: user['password'],
      tls: { ca: tls['ca.crt'], servername: 'localhost' },
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on('error', () => {}); // refused until redis-server listens: the loop below retries
    try {
      for (let i = 0; ; i++) {
        try {
          await redis.connect();
          break;
        } catch (err) {
          if (i > 50) throw err;
          await sleep(100);
        }
      }
      expect(await redis.ping()).toBe('PONG');
      expect(user['url']).toBe(`redis://volume-medic-receiver:${user['password']}@volume-medic-redis.volume-medic.svc:6379`);
      await expect(redis.set('elsewhere:x', '1')).rejects.toThrow(/NOPERM/);
    } finally {
      redis.disconnect();
      proc.kill('SIGKILL');
    }
  });
});
