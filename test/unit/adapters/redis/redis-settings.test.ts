import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadEveryConfig } from '../../../../src/core/config/load.ts';
import { ackReplicas, describeTarget, redisTarget } from '../../../../src/adapters/redis/redis-target.ts';

// Where Redis is: exactly one of a URL, sentinels or cluster nodes, validated at start with the
// variable named and no password ever in the message.

const fails = (env: Record<string, string>): string => {
  try {
    loadEveryConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

describe('Redis settings', () => {
  it('defaults to a single Redis on 127.0.0.1:6379 for development', () => {
    expect(redisTarget(loadEveryConfig({}))).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379' });
    expect(ackReplicas(loadEveryConfig({}))).toBe(0);
  });

  it('takes a redis:// or rediss:// URL and refuses any other scheme, naming REDIS_URL', () => {
    expect(redisTarget(loadEveryConfig({ REDIS_URL: 'rediss://cache.example:6380/2' }))).toEqual({
      kind: 'single',
      url: 'rediss://cache.example:6380/2',
      tls: {},
    });
    // A CA file alone does not turn TLS on (it may be mounted everywhere); with rediss:// it is the CA.
    expect(redisTarget(loadEveryConfig({ REDIS_URL: 'redis://cache:6379', REDIS_TLS_CA_FILE: '/etc/hostname' }))).toEqual({
      kind: 'single',
      url: 'redis://cache:6379',
    });
    expect(redisTarget(loadEveryConfig({ REDIS_URL: 'rediss://cache:6379', REDIS_TLS_CA_FILE: '/etc/hostname' }))).toEqual({
      kind: 'single',
      url: 'rediss://cache:6379',
      tls: { caFile: '/etc/hostname' },
    });
    expect(fails({ REDIS_URL: 'http://cache.example:6379' })).toMatch(/REDIS_URL: a redis:\/\/ or rediss:\/\/ URL \(got "http:\/\/cache.example:6379"\)/);
    expect(fails({ REDIS_URL: 'cache.example:6379' })).toMatch(/REDIS_URL/);
  });

  it('never echoes a password: not from REDIS_URL, REDIS_PASSWORD or REDIS_SENTINEL_PASSWORD', () => {
    const m = fails({
      REDIS_URL: 'http://user:hunter2secret@cache:6379',
      REDIS_PASSWORD: 'pw-hunter3',
      REDIS_SENTINEL_PASSWORD: 'pw-hunter4',
    });
    expect(m).toMatch(/REDIS_URL/);
    expect(m).toMatch(/REDIS_SENTINEL_PASSWORD: only meaningful with REDIS_SENTINELS/);
    expect(m).not.toMatch(/hunter/);
    expect(fails({ REDIS_URL: 'redis://:hunter2secret@cache:6379', REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'mymaster' })).not.toMatch(/hunter/);
  });

  it('refuses two topologies at once, naming the variables', () => {
    const m = fails({ REDIS_URL: 'redis://cache:6379', REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'mymaster' });
    expect(m).toMatch(/REDIS_SENTINELS: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES \(also set: REDIS_URL\)/);
    expect(fails({ REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'c1:6379' })).toMatch(/REDIS_CLUSTER_NODES: set only one/);
  });

  it('reads sentinels with the primary name, and requires that name', () => {
    const c = loadEveryConfig({
      REDIS_SENTINELS: 'sentinel-0.redis:26379, [fd00::1]:26380',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_SENTINEL_PASSWORD: 'sp',
      REDIS_PASSWORD: 'p',
      REDIS_USERNAME: 'vm',
    });
    expect(redisTarget(c)).toEqual({
      kind: 'sentinel',
      name: 'mymaster',
      sentinelPassword: 'sp',
      username: 'vm',
      password: 'p',
      sentinels: [
        { host: 'sentinel-0.redis', port: 26379 },
        { host: 'fd00::1', port: 26380 },
      ],
    });
    expect(ackReplicas(c)).toBe(1);
    expect(ackReplicas(loadEveryConfig({ REDIS_SENTINELS: 's:1', REDIS_SENTINEL_NAME: 'm', REDIS_ACK_REPLICAS: '0' }))).toBe(0);
    expect(describeTarget(redisTarget(c))).toBe('sentinel mymaster via sentinel-0.redis:26379,[fd00::1]:26380');
    expect(fails({ REDIS_SENTINELS: 's1:26379' })).toMatch(/REDIS_SENTINEL_NAME: required with REDIS_SENTINELS/);
  });

  it('reads cluster nodes and refuses a node without a port, naming REDIS_CLUSTER_NODES', () => {
    expect(redisTarget(loadEveryConfig({ REDIS_CLUSTER_NODES: 'c1:7000,c2:7001', REDIS_TLS: 'true' }))).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'c1', port: 7000 },
        { host: 'c2', port: 7001 },
      ],
      tls: {},
    });
    expect(fails({ REDIS_CLUSTER_NODES: 'c1:7000,c2' })).toMatch(/REDIS_CLUSTER_NODES: expected host:port.*\(got \["c1:7000","c2"\]\)/);
    expect(fails({ REDIS_CLUSTER_NODES: 'c1:70000' })).toMatch(/REDIS_CLUSTER_NODES/);
    expect(fails({ REDIS_SENTINELS: 's1', REDIS_SENTINEL_NAME: 'm' })).toMatch(/REDIS_SENTINELS: expected host:port/);
  });

  it('refuses a replica acknowledgement on a Cluster, and an unreadable CA file', () => {
    expect(fails({ REDIS_CLUSTER_NODES: 'c1:7000', REDIS_ACK_REPLICAS: '1' })).toMatch(/REDIS_ACK_REPLICAS: not supported with REDIS_CLUSTER_NODES/);
    expect(fails({ REDIS_TLS: 'true', REDIS_TLS_CA_FILE: '/nonexistent/ca.pem' })).toMatch(/REDIS_TLS_CA_FILE: cannot read \/nonexistent\/ca.pem: ENOENT/);
  });

  it('describes a single target without its password', () => {
    expect(describeTarget(redisTarget(loadEveryConfig({ REDIS_URL: 'redis://u:secret@cache:6379/1' })))).toBe('single redis://cache:6379/1');
  });
});

describe('Redis credentials from files (REDIS_URL_FILE, REDIS_PASSWORD_FILE, REDIS_SENTINEL_PASSWORD_FILE)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vm-redis-files-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const f = join(dir, name);
    writeFileSync(f, text);
    return f;
  };

  it('reads each from its file as a mounted Secret holds it, trailing newline or not: the same connection as from the environment', () => {
    const url = 'rediss://volume-medic-receiver:pw-hunter5@volume-medic-redis.volume-medic.svc:6379';
    expect(redisTarget(loadEveryConfig({ REDIS_URL_FILE: file('url', `${url}\n`) }))).toEqual(redisTarget(loadEveryConfig({ REDIS_URL: url })));
    expect(loadEveryConfig({ REDIS_URL_FILE: file('url-bare', url) }).redisUrl).toBe(url);
    const fromFiles = loadEveryConfig({
      REDIS_SENTINELS: 's1:26379',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_USERNAME: 'vm',
      REDIS_PASSWORD_FILE: file('password', 'p\n'),
      REDIS_SENTINEL_PASSWORD_FILE: file('sentinel-password', 'sp'),
    });
    expect(redisTarget(fromFiles)).toMatchObject({ kind: 'sentinel', username: 'vm', password: 'p', sentinelPassword: 'sp' });
  });

  it('refuses a file and the variable both set, and a file it cannot read, naming the variables and never the secret', () => {
    const url = file('url-both', 'redis://u:pw-hunter6@cache:6379\n');
    const both = fails({ REDIS_URL_FILE: url, REDIS_URL: 'redis://u:pw-hunter7@cache:6379' });
    expect(both).toMatch(/REDIS_URL_FILE: REDIS_URL is set too; set one of them/);
    expect(both).not.toMatch(/hunter/);
    expect(fails({ REDIS_PASSWORD_FILE: join(dir, 'missing') })).toMatch(/REDIS_PASSWORD_FILE: cannot read .*missing: ENOENT/);
  });

  it('names the file when its URL is not a Redis URL, with the password hidden', () => {
    const m = fails({ REDIS_URL_FILE: file('url-bad', 'http://u:pw-hunter8@cache:6379\n') });
    expect(m).toMatch(/REDIS_URL \(from REDIS_URL_FILE .*url-bad\): a redis:\/\/ or rediss:\/\/ URL/);
    expect(m).not.toMatch(/hunter/);
  });
});
