import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { COMPONENTS, type Component } from '../../src/adapters/kube/rbac.ts';
import { renderRedisAcl as renderAcl } from '../../src/control/secrets/redis-acl.ts';
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

/** The ACL file for this prefix and these passwords (stored as SHA-256 hashes, never in clear). */
export function renderRedisAcl(opts: { prefix: string; passwords: Readonly<Record<Component, string>>; template?: string }): string {
  return renderAcl({ prefix: opts.prefix, passwords: opts.passwords, template: opts.template ?? readFileSync(ACL_TEMPLATE, 'utf8') });
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
      labels: {
        'app.kubernetes.io/name': 'volume-medic',
        'app.kubernetes.io/part-of': 'volume-medic',
        ...(component ? { 'app.kubernetes.io/component': component } : {}),
      },
    },
    type: 'Opaque',
    stringData: data,
  });
  const scheme = o.tls ? 'rediss' : 'redis';
  return [
    secret(REDIS_ACL_SECRET, { 'users.acl': renderRedisAcl({ prefix: o.prefix, passwords }) }, 'redis'),
    ...COMPONENTS.map((c) =>
      secret(REDIS_URL_SECRETS[c], { url: `${scheme}://${REDIS_USERS[c]}:${passwords[c]}@${o.address}`, username: REDIS_USERS[c], password: passwords[c] }, c),
    ),
  ];
}

export const secretsYaml = (objects: ReadonlyArray<Record<string, unknown>>): string => objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
