import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CHART_DIR, helmTemplate, helmTemplateText, valuesFile, VALUE_SETS, type KObject } from '../../../../scripts/deploy/chart.ts';
import { ensureSecrets } from '../../../../src/control/secrets/ensure.ts';
import { MemoryObjectStore } from '../../../testkit/memory-object-store.ts';
import { find, secretsSpec } from '../../../support/manifests.ts';

// GitOps: Argo CD and Flux render the chart with `helm template` (no cluster: `lookup` finds
// nothing) and apply what changed. A random value in a template would be new on every render and
// rotate a token or a key on every sync. So the chart renders nothing random: its hook Job
// (src/control/secrets) makes the Secrets once in the cluster. And what the Job makes them from is in the
// pods' checksum annotation, so a change that makes a Secret anew rolls the pods that read it.

const workloads = [
  ['Deployment', 'volume-medic-receiver'],
  ['Deployment', 'volume-medic-cluster-worker'],
  ['DaemonSet', 'volume-medic-node-agent'],
] as const;
const annotations = (o: KObject): Record<string, string> =>
  (o['spec'] as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations;

describe('helm template renders nothing random', { timeout: 120_000 }, () => {
  it('two renders of every CI values set are the same, byte for byte (so no Secret value differs)', () => {
    for (const set of [...VALUE_SETS, 'static']) {
      const first = helmTemplateText({ values: [valuesFile(set)] });
      expect(helmTemplateText({ values: [valuesFile(set)] }), set).toBe(first);
    }
  });

  it('renders no Secret with data at all, and no template asks the cluster (lookup) or draws randomness', () => {
    for (const set of [...VALUE_SETS, 'static']) {
      const secrets = helmTemplate({ values: [valuesFile(set)] }).filter((o) => o.kind === 'Secret');
      expect(
        secrets.map((o) => o.metadata.name),
        set,
      ).toEqual([]);
    }
    for (const f of readdirSync(join(CHART_DIR, 'templates'))) {
      const text = readFileSync(join(CHART_DIR, 'templates', f), 'utf8').replace(/\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g, '');
      expect(text, f).not.toMatch(
        /\b(lookup|randAlphaNum|randAlpha|randNumeric|randAscii|randBytes|uuidv4|genPrivateKey|genCA|genSelfSignedCert\w*|genSignedCert\w*|now)\b\s/,
      );
    }
  });
});

describe('pod checksums cover what the Secrets are made from', { timeout: 120_000 }, () => {
  const base = helmTemplate();

  it("another name for the receiver's certificate changes every process's checksum/secrets, and the hook makes that certificate anew, with the name", async () => {
    const more = helmTemplate({ set: ['receiver.tls.extraDnsNames={volume-medic.example.com}'] });
    for (const [kind, name] of workloads) {
      expect(annotations(find(more, kind, name))['checksum/secrets'], name).not.toBe(annotations(find(base, kind, name))['checksum/secrets']);
    }
    const store = new MemoryObjectStore();
    await ensureSecrets(secretsSpec(base)!, store);
    const before = store.data('Secret', 'volume-medic-receiver-tls');
    const report = await ensureSecrets(secretsSpec(more)!, store);
    expect(report.filter((r) => r.outcome !== 'kept')).toEqual([
      { kind: 'Secret', name: 'volume-medic-receiver-tls', outcome: 'updated' },
      { kind: 'ConfigMap', name: 'volume-medic-receiver-ca', outcome: 'updated' },
    ]);
    const after = store.data('Secret', 'volume-medic-receiver-tls');
    expect(after['tls.crt']).not.toBe(before['tls.crt']);
    expect(new X509Certificate(after['tls.crt']!).checkHost('volume-medic.example.com')).toBe('volume-medic.example.com');
    expect(new X509Certificate(after['tls.crt']!).verify(new X509Certificate(store.data('ConfigMap', 'volume-medic-receiver-ca')['ca.crt']!).publicKey)).toBe(
      true,
    );
  });

  it('another queue prefix rewrites the ACL file (passwords kept) and rolls Redis; the processes roll through their ConfigMap', async () => {
    const other = helmTemplate({ set: ['config.queuePrefix=vm2'] });
    expect(annotations(find(other, 'StatefulSet', 'volume-medic-redis'))['checksum/acl']).not.toBe(
      annotations(find(base, 'StatefulSet', 'volume-medic-redis'))['checksum/acl'],
    );
    for (const [kind, name] of workloads)
      expect(annotations(find(other, kind, name))['checksum/config'], name).not.toBe(annotations(find(base, kind, name))['checksum/config']);
    const store = new MemoryObjectStore();
    await ensureSecrets(secretsSpec(base)!, store);
    const password = store.data('Secret', 'volume-medic-redis-receiver')['password'];
    const report = await ensureSecrets(secretsSpec(other)!, store);
    expect(report.filter((r) => r.outcome !== 'kept')).toEqual([{ kind: 'Secret', name: 'volume-medic-redis-acl', outcome: 'updated' }]);
    expect(store.data('Secret', 'volume-medic-redis-acl')['users.acl']).toContain('~vm2:*');
    expect(store.data('Secret', 'volume-medic-redis-receiver')['password']).toBe(password);
  });

  it('naming your own Secret instead changes the checksum; the chart version or a replica count does not', () => {
    const [kind, name] = workloads[0];
    const sum = (o: KObject[]) => annotations(find(o, kind, name))['checksum/secrets'];
    expect(sum(helmTemplate({ set: ['webhookToken.existingSecret=my-token'] }))).not.toBe(sum(base));
    expect(sum(helmTemplate({ set: ['receiver.replicas=3'] }))).toBe(sum(base));
    // The spec the checksum covers names no chart version (labels are the stable ones).
    expect(JSON.stringify(secretsSpec(base))).not.toMatch(/helm\.sh\/chart|app\.kubernetes\.io\/version/);
  });
});

describe('a release from a chart that rendered its Secrets itself (0.1.0)', () => {
  it('keeps them on the upgrade: the hook marks the live ones helm.sh/resource-policy: keep, so Helm does not delete what it no longer renders', async () => {
    const store = new MemoryObjectStore();
    const token = {
      apiVersion: 'v1' as const,
      kind: 'Secret' as const,
      metadata: { name: 'volume-medic-webhook-token', annotations: { 'meta.helm.sh/release-name': 'volume-medic' } },
      data: { token: Buffer.from('t'.repeat(48)).toString('base64') },
    };
    await store.create(token);
    await ensureSecrets(secretsSpec(helmTemplate())!, store);
    expect(store.data('Secret', 'volume-medic-webhook-token')['token']).toBe('t'.repeat(48));
    expect(store.objects.get('Secret/volume-medic-webhook-token')!.metadata.annotations).toEqual({
      'meta.helm.sh/release-name': 'volume-medic',
      'helm.sh/resource-policy': 'keep',
    });
  });
});
