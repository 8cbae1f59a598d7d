import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { COMPONENTS, type Component } from '../../src/kube/rbac.ts';
import { CHART_DIR } from './chart.ts';

// The Redis side of least privilege: the ACL file of the bundled Redis, rendered from
// the chart's files/users.acl.template (the chart renders the same file itself for the bundled
// Redis, templates/redis.yaml), and the Secrets that carry each process's
// REDIS_URL (its own user and password). `node scripts/deploy/redis-secrets.ts` prints them.

export const ACL_TEMPLATE = join(CHART_DIR, 'files/users.acl.template');

/** The Redis user of each process. */
export const REDIS_USERS: Readonly<Record<Component, string>> = {
  receiver: 'volume-medic-receiver',
  'cluster-worker': 'volume-medic-cluster-worker',
  'node-agent': 'volume-medic-node-agent',
};

/** The Secret (key `url`; `username` and `password` for Sentinel and Cluster) each process reads. */
export const REDIS_URL_SECRETS: Readonly<Record<Component, string>> = {
  receiver: 'volume-medic-redis-receiver',
  'cluster-worker': 'volume-medic-redis-cluster-worker',
  'node-agent': 'volume-medic-redis-node-agent',
};
export const REDIS_ACL_SECRET = 'volume-medic-redis-acl';

// The prefix becomes an ACL key pattern (~<prefix>:*): no glob characters, no spaces.
// The same rule as QUEUE_PREFIX's (src/config/schema.ts).
const PREFIX = /^[A-Za-z0-9_-]{1,64}$/;

/** The ACL file for this prefix and these passwords (stored as SHA-256 hashes, never in clear). */
export function renderRedisAcl(opts: { prefix: string; passwords: Readonly<Record<Component, string>>; template?: string }): string {
  if (!PREFIX.test(opts.prefix)) throw new Error(`QUEUE_PREFIX "${opts.prefix}" cannot be an ACL key pattern: letters, digits, _ and - only`);
  const template = opts.template ?? readFileSync(ACL_TEMPLATE, 'utf8');
  const values: Record<string, string> = { prefix: opts.prefix };
  for (const c of COMPONENTS) values[`${c}-sha256`] = createHash('sha256').update(opts.passwords[c]).digest('hex');
  const out = template.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')).map((l) => l.replace(/\{\{([a-z0-9-]+)\}\}/g, (_m, k: string) => {
    const v = values[k];
    if (v === undefined) throw new Error(`${ACL_TEMPLATE}: unknown placeholder {{${k}}}`);
    return v;
  }));
  return `${out.join('\n')}\n`;
}

export const newPassword = (): string => randomBytes(32).toString('hex');

export interface RedisSecretsOptions {
  prefix: string;
  /** host:port of Redis as the pods reach it. */
  address: string;
  tls: boolean;
  namespace: string;
  passwords?: Readonly<Record<Component, string>>;
}

/** The ACL Secret for the bundled Redis and one REDIS_URL Secret per process. */
export function redisSecrets(o: RedisSecretsOptions): Array<Record<string, unknown>> {
  const passwords = o.passwords ?? { receiver: newPassword(), 'cluster-worker': newPassword(), 'node-agent': newPassword() };
  const secret = (name: string, data: Record<string, string>, component?: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: o.namespace,
      labels: { 'app.kubernetes.io/name': 'volume-medic', 'app.kubernetes.io/part-of': 'volume-medic', ...(component ? { 'app.kubernetes.io/component': component } : {}) },
    },
    type: 'Opaque',
    stringData: data,
  });
  const scheme = o.tls ? 'rediss' : 'redis';
  return [
    secret(REDIS_ACL_SECRET, { 'users.acl': renderRedisAcl({ prefix: o.prefix, passwords }) }, 'redis'),
    ...COMPONENTS.map((c) => secret(REDIS_URL_SECRETS[c], { url: `${scheme}://${REDIS_USERS[c]}:${passwords[c]}@${o.address}`, username: REDIS_USERS[c], password: passwords[c] }, c)),
  ];
}

export const secretsYaml = (objects: ReadonlyArray<Record<string, unknown>>): string => objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
