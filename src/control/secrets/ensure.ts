import { createPrivateKey, createPublicKey, randomBytes, randomInt, X509Certificate } from 'node:crypto';
import { COMPONENTS, type Component } from '../../adapters/kube/rbac.ts';
import { renderRedisAcl } from './redis-acl.ts';
import type { SecretItem, SecretsSpec } from './spec.ts';
import type { KubeObject, Kind, ObjectStore } from './store.ts';
import { certificate, ecKey, serverCertificate } from './x509.ts';

// The chart's hook Job (pre-install, pre-upgrade): each Secret the chart needs and the operator
// did not name is made once, in the cluster, and never again. An existing one is kept as it is;
// what is derived from others (the ACL file from the passwords, a CA ConfigMap from its Secret, a
// certificate that lacks a wanted name) is brought in line. So the chart itself renders nothing
// random: `helm template` (Argo CD, Flux) prints the same objects every time and never rotates a
// token or key.
//
// Every object it keeps or makes carries helm.sh/resource-policy: keep. Charts before 0.2.0
// rendered these Secrets themselves; on the upgrade that stops rendering them, Helm would delete
// them after this hook ran, unless the live object says keep (Helm reads the live annotation).

type Outcome = 'created' | 'kept' | 'updated';
export interface Report {
  kind: Kind;
  name: string;
  outcome: Outcome;
}

const KEEP = { 'helm.sh/resource-policy': 'keep' };
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8'));
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Letters and digits, uniformly (randomInt rejects the modulo bias). */
export const randomAlnum = (n: number): string => Array.from({ length: n }, () => ALNUM[randomInt(ALNUM.length)]).join('');

export async function ensureSecrets(spec: SecretsSpec, store: ObjectStore, now: () => Date = () => new Date()): Promise<Report[]> {
  const reports: Report[] = [];
  const e = new Ensurer(store, spec.namespace, reports);
  for (const item of spec.items) await ensureItem(item, e, now);
  return reports;
}

/** The steps every item is made of: keep what exists (marked keep), create what does not, replace derived data. */
class Ensurer {
  readonly store: ObjectStore;
  readonly namespace: string;
  readonly reports: Report[];

  constructor(store: ObjectStore, namespace: string, reports: Report[]) {
    this.store = store;
    this.namespace = namespace;
    this.reports = reports;
  }

  /** The live object, marked keep when it was not; undefined when absent. */
  async existing(kind: Kind, name: string): Promise<KubeObject | undefined> {
    const o = await this.store.get(kind, name);
    if (o && o.metadata.annotations?.['helm.sh/resource-policy'] !== 'keep') await this.store.patch(kind, name, { metadata: { annotations: KEEP } });
    return o;
  }

  /** Creates it; when someone else did first, theirs is the one (returned). */
  async create(kind: Kind, name: string, labels: Record<string, string>, data: Record<string, string>, type?: string): Promise<KubeObject> {
    const o: KubeObject = {
      apiVersion: 'v1',
      kind,
      metadata: { name, namespace: this.namespace, labels, annotations: KEEP },
      ...(type ? { type } : {}),
      data: kind === 'Secret' ? Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) : data,
    };
    if (await this.store.create(o)) {
      this.reports.push({ kind, name, outcome: 'created' });
      return o;
    }
    const theirs = await this.existing(kind, name);
    if (!theirs) throw new Error(`${kind} ${name}: the API server said it exists, then that it does not`);
    this.reports.push({ kind, name, outcome: 'kept' });
    return theirs;
  }

  /** Existing, kept; else created from make(). */
  async once(kind: Kind, name: string, labels: Record<string, string>, make: () => Record<string, string>, type?: string): Promise<KubeObject> {
    const o = await this.existing(kind, name);
    if (o) {
      this.reports.push({ kind, name, outcome: 'kept' });
      return o;
    }
    return this.create(kind, name, labels, make(), type);
  }

  /** Derived data: created, or its data replaced when it differs (plain text in, base64 for Secrets). */
  async derived(kind: Kind, name: string, labels: Record<string, string>, data: Record<string, string>): Promise<void> {
    const o = await this.existing(kind, name);
    if (!o) {
      await this.create(kind, name, labels, data);
      return;
    }
    const live = kind === 'Secret' ? Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, unb64(v)])) : (o.data ?? {});
    if (Object.entries(data).every(([k, v]) => live[k] === v)) {
      this.reports.push({ kind, name, outcome: 'kept' });
      return;
    }
    const wire = kind === 'Secret' ? Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) : data;
    await this.store.patch(kind, name, { data: wire });
    this.reports.push({ kind, name, outcome: 'updated' });
  }
}

/** Does the PEM certificate name every wanted DNS name and IP address? */
function covers(certPem: string | undefined, dnsNames: readonly string[], ips: readonly string[]): boolean {
  if (!certPem) return false;
  try {
    const cert = new X509Certificate(certPem);
    return dnsNames.every((n) => cert.checkHost(n, { wildcards: false }) === n) && ips.every((ip) => cert.checkIP(ip) === ip);
  } catch {
    return false;
  }
}

// long because: one Secret or ConfigMap made once: read, decide (keep, make, refuse a foreign one), write, each with its reason
async function ensureItem(item: SecretItem, e: Ensurer, now: () => Date): Promise<void> {
  switch (item.make) {
    case 'token':
      await e.once('Secret', item.secret, item.labels, () => ({ [item.key]: randomAlnum(item.length) }), 'Opaque');
      return;
    case 'signing-key':
      await e.once('Secret', item.secret, item.labels, () => ({ [item.file]: `${randomBytes(32).toString('base64')}\n` }), 'Opaque');
      return;
    case 'tls': {
      let secret = await e.existing('Secret', item.secret);
      const crt = unb64(secret?.data?.['tls.crt']);
      if (secret && unb64(secret.data?.['ca.crt']) && covers(crt, item.dnsNames, item.ipAddresses)) {
        // Kept: its CA may already be what clients trust.
      } else {
        const made = serverCertificate({
          caName: item.caName,
          commonName: item.commonName,
          dnsNames: item.dnsNames,
          ipAddresses: item.ipAddresses,
          days: item.days,
          now: now(),
        });
        const data = { 'tls.crt': made.crt, 'tls.key': made.key, 'ca.crt': made.caCrt };
        if (secret) {
          // A certificate without a name it now needs (receiver.tls.extraDnsNames): made again, CA too.
          await e.derived('Secret', item.secret, item.labels, data);
        } else {
          secret = await e.create('Secret', item.secret, item.labels, data, 'kubernetes.io/tls');
        }
        secret = await e.existing('Secret', item.secret);
      }
      if (item.caConfigMap) await e.derived('ConfigMap', item.caConfigMap, item.labels, { 'ca.crt': unb64(secret!.data?.['ca.crt']) ?? '' });
      return;
    }
    case 'control-signing': {
      const secret = await e.once('Secret', item.secret, item.labels, () => ({ 'control.key': ecKey().pem }), 'Opaque');
      const keyPem = unb64(secret.data?.['control.key'])!;
      const cm = await e.existing('ConfigMap', item.configMap);
      const priv = createPrivateKey(keyPem);
      // Kept when one of its certificates (several while rotating) is of this key; else made for it.
      const certs = (cm?.data?.['control.crt'] ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      const ofKey = certs.some((c) => {
        try {
          return new X509Certificate(c).checkPrivateKey(priv);
        } catch {
          return false;
        }
      });
      if (cm && ofKey) return;
      const cert = certificate({
        commonName: item.commonName,
        publicKey: createPublicKey(priv),
        selfKey: priv,
        isCA: false,
        days: item.days,
        now: now(),
      });
      await e.derived('ConfigMap', item.configMap, item.labels, { 'control.crt': cert });
      return;
    }
    case 'redis-users': {
      const passwords = {} as Record<Component, string>;
      for (const u of item.users) {
        const s = await e.once(
          'Secret',
          u.secret,
          u.labels,
          () => {
            const password = randomAlnum(48);
            return { url: `redis://${u.username}:${password}@${item.address}`, username: u.username, password };
          },
          'Opaque',
        );
        const password = unb64(s.data?.['password']);
        if (!password)
          throw new Error(`Secret ${u.secret} has no password: delete it to have a new one made, or name your own (redis.credentials.existingSecrets)`);
        passwords[u.component] = password;
      }
      for (const c of COMPONENTS) if (!(c in passwords)) throw new Error(`redis-users: no user for ${c}`);
      await e.derived('Secret', item.aclSecret, item.labels, {
        'users.acl': renderRedisAcl({ prefix: item.prefix, passwords, template: item.template }),
      });
      return;
    }
    default: {
      const never: never = item;
      throw new Error(`unknown item ${JSON.stringify(never)}`);
    }
  }
}
