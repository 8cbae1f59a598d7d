import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ensureSecrets, randomAlnum } from '../../../../src/control/secrets/ensure.ts';
import type { SecretsSpec } from '../../../../src/control/secrets/spec.ts';
import type { KubeObject } from '../../../../src/control/secrets/store.ts';
import { certificate, ecKey } from '../../../../src/control/secrets/x509.ts';
import { MemoryObjectStore } from '../../../testkit/memory-object-store.ts';

// The secrets hook's rules, one at a time: make once, keep what exists (whoever made it), bring
// derived data in line, and say so. The chart's own spec is exercised in test/unit/repo/deploy.

const labels = { 'app.kubernetes.io/name': 'volume-medic' };
const spec = (...items: SecretsSpec['items']): SecretsSpec => ({ version: 1, namespace: 'ns', items });
const secret = (name: string, data: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});

describe('ensureSecrets', () => {
  it('when another run created the Secret first (409), keeps theirs and reports it kept', async () => {
    const store = new MemoryObjectStore();
    const theirs = secret('tok', { token: 'theirs-0123456789abcdef' });
    // The race: absent when read, present when created.
    const get = store.get.bind(store);
    let first = true;
    store.get = async (kind, name) => {
      if (first) {
        first = false;
        await store.create(theirs);
        return undefined;
      }
      return get(kind, name);
    };
    const report = await ensureSecrets(spec({ make: 'token', secret: 'tok', key: 'token', length: 32, labels }), store);
    expect(report).toEqual([{ kind: 'Secret', name: 'tok', outcome: 'kept' }]);
    expect(store.data('Secret', 'tok')['token']).toBe('theirs-0123456789abcdef');
  });

  it("keeps a control certificate ConfigMap that holds the key's certificate among others (a rotation), and makes one for the key when none is of it", async () => {
    const store = new MemoryObjectStore();
    const key = ecKey();
    const other = ecKey();
    const mine = certificate({ commonName: 'c', publicKey: key.publicKey, selfKey: key.privateKey, isCA: false, days: 10 });
    const theirs = certificate({ commonName: 'c', publicKey: other.publicKey, selfKey: other.privateKey, isCA: false, days: 10 });
    await store.create(secret('ctl', { 'control.key': key.pem }));
    await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ctl-certs' }, data: { 'control.crt': theirs + mine } });
    const item = { make: 'control-signing' as const, secret: 'ctl', configMap: 'ctl-certs', commonName: 'c', days: 10, labels };
    expect((await ensureSecrets(spec(item), store)).map((r) => r.outcome)).toEqual(['kept']);
    expect(store.data('ConfigMap', 'ctl-certs')['control.crt']).toBe(theirs + mine);
    await store.patch('ConfigMap', 'ctl-certs', { data: { 'control.crt': theirs } });
    expect((await ensureSecrets(spec(item), store)).map((r) => r.outcome)).toEqual(['kept', 'updated']);
    expect(new X509Certificate(store.data('ConfigMap', 'ctl-certs')['control.crt']!).checkPrivateKey(key.privateKey)).toBe(true);
  });

  it('a Redis user Secret without a password stops the hook with what to do, instead of an ACL file nobody can use', async () => {
    const store = new MemoryObjectStore();
    await store.create(secret('r-receiver', { url: 'redis://x' }));
    const users = (['receiver', 'cluster-worker', 'node-agent'] as const).map((c) => ({
      component: c,
      secret: `r-${c}`,
      username: `u-${c}`,
      labels,
    }));
    await expect(
      ensureSecrets(
        spec({
          make: 'redis-users',
          aclSecret: 'acl',
          address: 'r:6379',
          prefix: 'p',
          template: 'user {{receiver-sha256}} ~{{prefix}}:*\n',
          users,
          labels,
        }),
        store,
      ),
    ).rejects.toThrow(/r-receiver has no password: delete it/);
  });

  it('a certificate Secret someone made without ca.crt is made anew', async () => {
    const store = new MemoryObjectStore();
    await store.create(secret('tls', { 'tls.crt': 'x', 'tls.key': 'y' }));
    const report = await ensureSecrets(
      spec({ make: 'tls', secret: 'tls', caName: 'ca', commonName: 'n', dnsNames: ['n'], ipAddresses: [], days: 1, labels }),
      store,
    );
    expect(report).toEqual([{ kind: 'Secret', name: 'tls', outcome: 'updated' }]);
    expect(new X509Certificate(store.data('Secret', 'tls')['tls.crt']!).verify(new X509Certificate(store.data('Secret', 'tls')['ca.crt']!).publicKey)).toBe(
      true,
    );
  });

  it('random tokens are letters and digits of the length asked, and differ', () => {
    const a = randomAlnum(48);
    expect(a).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(randomAlnum(48)).not.toBe(a);
  });
});
