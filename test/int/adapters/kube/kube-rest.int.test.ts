import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfigError } from '../../../../src/adapters/kube/config-error.ts';
import { inClusterRest } from '../../../../src/adapters/kube/rest/in-cluster.ts';
import { KubeRestError } from '../../../../src/adapters/kube/rest/transport.ts';

// The node agent's in-cluster access over real TLS: a service-account directory (token, ca.crt)
// and an HTTPS server whose certificate that CA must verify; the token file is re-read once a
// minute, as the kubelet rotates it.

describe('src/adapters/kube/rest in a pod: service account token and CA over HTTPS', () => {
  let dir: string;
  let server: Server;
  let port: number;
  const seen: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-sa-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'tls.key'),
        '-out',
        join(dir, 'ca.crt'),
      ],
      { stdio: 'ignore' },
    );
    writeFileSync(join(dir, 'token'), 'token-one\n');
    server = createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'ca.crt')) }, (req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/v1/nodes/worker-1') {
        res.end(JSON.stringify({ kind: 'Node', metadata: { name: 'worker-1', labels: { a: 'b' } } }));
        return;
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'NotFound', message: 'nodes "nope" not found', code: 404 }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('verifies the server with the service account CA, sends the token, and re-reads it after a minute', async () => {
    let t = 0;
    const rest = inClusterRest({ KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port) }, dir, () => t);
    expect(await rest.get('/api/v1/nodes/worker-1')).toMatchObject({ metadata: { name: 'worker-1' } });
    writeFileSync(join(dir, 'token'), 'token-two\n');
    t = 30_000;
    await rest.get('/api/v1/nodes/worker-1');
    t = 61_000;
    await rest.get('/api/v1/nodes/worker-1');
    expect(seen.slice(-3)).toEqual(['Bearer token-one', 'Bearer token-one', 'Bearer token-two']);
  });

  it("turns an API error into the HTTP status as `code`, with the server's message", async () => {
    const rest = inClusterRest({ KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port) }, dir);
    const err = await rest.get('/api/v1/nodes/nope').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeRestError);
    expect(err).toMatchObject({ code: 404, reason: 'NotFound' });
    expect((err as Error).message).toContain('nodes "nope" not found');
  });

  it('refuses a server its CA did not sign, and says clearly what is missing', async () => {
    const other = mkdtempSync(join(tmpdir(), 'vm-sa-other-'));
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=other', '-keyout', join(other, 'k'), '-out', join(other, 'ca.crt')],
        { stdio: 'ignore' },
      );
      writeFileSync(join(other, 'token'), 't');
      const rest = inClusterRest({ KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port) }, other);
      await expect(rest.get('/api/v1/nodes/worker-1')).rejects.toThrow(/self.signed|certificate/i);
      expect(() => inClusterRest({ KUBERNETES_SERVICE_HOST: '127.0.0.1' }, join(other, 'missing'))).toThrow(KubeConfigError);
      expect(() => inClusterRest({}, other)).toThrow(/KUBERNETES_SERVICE_HOST/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
