import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { REDIS_USERS, redisSecrets, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { COMPONENTS, type Component } from '../../../../src/adapters/kube/rbac.ts';

// The static half of the Redis ACL check (the live half, test/int/deploy/redis-acl.int.test.ts, runs a
// real redis-server on this file and reads its ACL LOG): every command that BullMQ's Lua scripts
// run, that volume-medic's own Lua scripts run, and that its code calls on an ioredis connection,
// is granted to the users that need it. A BullMQ upgrade that starts using a new command fails here
// before it fails in a cluster.

const ROOT = join(import.meta.dirname, '../../../..');
const require = createRequire(import.meta.url);
const REDIS_COMMANDS = new Set<string>((require('@ioredis/commands') as { list: string[] }).list);
const passwords = { receiver: 'a', 'cluster-worker': 'b', 'node-agent': 'c' };
const acl = renderRedisAcl({ prefix: 'volume-medic', passwords });

/** user -> its rules, from the rendered file. */
const users = new Map(
  acl
    .trim()
    .split('\n')
    .map((line) => {
      const [kw, name, ...rules] = line.split(' ');
      expect(kw).toBe('user');
      return [name!, rules] as const;
    }),
);
const allowed = (c: Component): Set<string> =>
  new Set(
    users
      .get(REDIS_USERS[c])!
      .filter((r) => r.startsWith('+'))
      .map((r) => r.slice(1)),
  );

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p, ext) : ext.test(n) ? [p] : [];
  });
}

/** Commands named in Lua: rcall("X") (BullMQ's alias) and redis.call('X'), plus BullMQ's computed ones. */
function luaCommands(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/(?:rcall|redis\.p?call)\(\s*["']([A-Za-z]+)["']/g)) out.add(m[1]!.toLowerCase());
  // rcall(pushCmd, ...) is LPUSH/RPUSH; rcall(countCommand/command, ...) SCARD/HLEN and SSCAN/HSCAN (paginate).
  for (const m of text.matchAll(/=\s*(?:[^\n]*\band\s+)?["']([A-Z]+)["']/g)) if (REDIS_COMMANDS.has(m[1]!.toLowerCase())) out.add(m[1]!.toLowerCase());
  for (const m of text.matchAll(/["'](sscan|hscan)["']/gi)) out.add(m[1]!.toLowerCase());
  return out;
}

const bullmqLua = files(join(ROOT, 'node_modules/bullmq/dist/esm/commands'), /\.lua$/)
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');
const ourSources = ['src', 'workers'].flatMap((dir) => files(join(ROOT, dir), /\.ts$/)).map((f) => [f, readFileSync(f, 'utf8')] as const);

/** ioredis calls in our code: `.cmd(` on a line that names a Redis connection, a pipeline or a MULTI chain. */
function ourDirectCommands(): Map<string, string> {
  const out = new Map<string, string>();
  for (const [file, text] of ourSources) {
    for (const line of text.split('\n')) {
      if (/^\s*(\/\/|\*)/.test(line)) continue;
      // The command right after a connection (`redis.hget(`, `this.#redis.eval(`, a pipeline `p.`),
      // and every command chained after `.multi()` / `.pipeline()` on that line.
      const chained = /\.(?:multi|pipeline)\(\)(.*)$/.exec(line)?.[1] ?? '';
      const calls = [...line.matchAll(/(?:redis|connection|\bp)\.([a-z]+)\(/gi), ...chained.matchAll(/\.([a-z]+)\(/g)];
      for (const m of calls) {
        const cmd = m[1]!;
        if (REDIS_COMMANDS.has(cmd) && !['quit', 'on', 'once'].includes(cmd)) out.set(cmd, file.slice(ROOT.length + 1));
      }
    }
  }
  return out;
}

// What only some processes run. Everything else every user needs (the receiver, the cluster
// worker and the node agent all add jobs, read jobs and the operator controls, run breaker scripts).
const ONLY: Record<string, readonly Component[]> = {
  bzpopmin: ['cluster-worker', 'node-agent'], // BullMQ Worker: waiting on the queue's marker
  // src/adapters/redis/replica-ack.ts: the receiver, with REDIS_ACK_REPLICAS > 0 (default with Sentinel;
  // settable on any primary with replicas), so granted in every rendering (docs/redis.md).
  wait: ['receiver'],
  zscan: ['receiver'], // src/adapters/jobstore/incident-index.ts: the console finds a job's or a node's index entries
  // The receiver's own (queue-scan.ts, job-states.ts: the console); the workers run only what the
  // receiver loaded (SCRIPT LOAD, script-preload.ts), by EVALSHA (lua-script.ts).
  eval: ['receiver'],
  'script|exists': ['receiver'],
  'script|load': ['receiver'],
  scan: ['receiver'], // scanKeys, src/adapters/redis/redis.ts (tests, tools); the per-node memory budget's count
  // src/adapters/redis/node-memory.ts: the per-node memory budget sizes the node queues' keys and gives a restricted node's back.
  'memory|usage': ['receiver'],
  unlink: ['receiver'],
  // src/adapters/jobstore/agent-runs.ts: the receiver's bounded read of a node's announcement (its AgentGate).
  getrange: ['receiver'],
};

describe('the Redis ACL users (deploy/charts/volume-medic/files/users.acl.template)', () => {
  it('turns default off, and gives each process one user on its prefix, no channels, -@all then a list', () => {
    expect(users.get('default')).toEqual(expect.arrayContaining(['off', '-@all']));
    expect(users.get('healthcheck')).toEqual(['on', 'nopass', 'resetkeys', 'resetchannels', '-@all', '+ping']);
    for (const c of COMPONENTS) {
      const rules = users.get(REDIS_USERS[c])!;
      const keys =
        c === 'node-agent'
          ? [
              '~volume-medic:vm-node-*',
              '~volume-medic:vm:queues',
              '~volume-medic:vm:stats',
              '~volume-medic:vm:ctl:audit',
              '~volume-medic:vm:ctl:parked',
              '~volume-medic:vm:ctl:approval:*',
              '~volume-medic:vm:ctl:breaker:*',
              '%R~volume-medic:vm:ctl:modes',
              '%R~volume-medic:vm:ctl:pause',
            ]
          : ['~volume-medic:*'];
      expect(rules.slice(0, 5 + keys.length)).toEqual([
        'on',
        `#${require('node:crypto').createHash('sha256').update(passwords[c]).digest('hex')}`,
        'resetkeys',
        'resetchannels',
        ...keys,
        '-@all',
      ]);
      // Only single commands after that: no categories, no other key or channel patterns.
      for (const r of rules.slice(5 + keys.length)) expect(r, `${c}: ${r}`).toMatch(/^\+[a-z]+(\|[a-z]+)?$/);
    }
  });

  it('grants no admin or global command to any user', () => {
    const never = [
      'flushall',
      'flushdb',
      'config',
      'keys',
      'debug',
      'shutdown',
      'monitor',
      'acl',
      'module',
      'client',
      'client|kill',
      'client|list',
      'script',
      'script|flush',
      'function',
      'replicaof',
      'slaveof',
      'migrate',
      'save',
      'bgsave',
      'publish',
      'subscribe',
      'select',
      'swapdb',
      'move',
      'sort',
    ];
    for (const c of COMPONENTS) for (const cmd of never) expect(allowed(c).has(cmd), `${c}: ${cmd}`).toBe(false);
  });

  it("grants every command BullMQ's Lua scripts run, to every process", () => {
    const needed = luaCommands(bullmqLua);
    expect(needed.size).toBeGreaterThan(40);
    for (const c of COMPONENTS)
      expect(
        [...needed].filter((cmd) => !allowed(c).has(cmd)),
        c,
      ).toEqual([]);
  });

  it("grants every command volume-medic's own Lua and ioredis calls use, to the processes that use it", () => {
    const lua = luaCommands(ourSources.map(([, t]) => t).join('\n'));
    const direct = ourDirectCommands();
    expect(direct.has('hgetall') && direct.has('zcount') && direct.has('hincrby')).toBe(true);
    // ACL is granted by subcommand, to the receiver only: the next test checks those.
    lua.delete('acl');
    for (const cmd of [
      ...lua,
      ...direct.keys(),
      'evalsha',
      'eval',
      'ping',
      'info',
      'client|setname',
      'multi',
      'exec',
      'scan' /* scanKeys, src/adapters/redis/redis.ts (tests, tools) */,
      'script|exists',
      'script|load',
      'memory|usage',
      'unlink' /* the per-node memory budget, src/adapters/redis/node-memory.ts */,
    ]) {
      const who = ONLY[cmd] ?? COMPONENTS;
      for (const c of who) expect(allowed(c).has(cmd), `${c} needs ${cmd} (${direct.get(cmd) ?? 'Lua / BullMQ'})`).toBe(true);
    }
  });

  it('gives only the receiver ACL rights, and only the three that per-node users need (src/adapters/redis/node-user-acl.ts, node-user-servers.ts)', () => {
    const aclRights = (c: Component): string[] => [...allowed(c)].filter((cmd) => cmd === 'acl' || cmd.startsWith('acl|')).sort();
    expect(aclRights('receiver')).toEqual(['acl|deluser', 'acl|setuser', 'acl|users']);
    expect(aclRights('cluster-worker')).toEqual([]);
    expect(aclRights('node-agent')).toEqual([]);
    // What the node users' modules send: the rules' pipelines (['SETUSER', ...], sent as ACL
    // subcommands) and the servers' own ACL calls. A grant missing here would fail every enrolment.
    const rules = readFileSync(join(ROOT, 'src/adapters/redis/node-user-acl.ts'), 'utf8');
    const servers = readFileSync(join(ROOT, 'src/adapters/redis/node-user-servers.ts'), 'utf8');
    expect(servers).toMatch(/\.call\('ACL', \.\.\.args\)/);
    const sent = new Set([
      ...[...rules.matchAll(/\['([A-Z]+)', user/g)].map((m) => `acl|${m[1]!.toLowerCase()}`),
      ...[...servers.matchAll(/'ACL', '([A-Z]+)'/g)].map((m) => `acl|${m[1]!.toLowerCase()}`),
    ]);
    expect([...sent].sort()).toEqual(aclRights('receiver'));
  });

  it("lets only the receiver EVAL a script it wrote, and load and check the agents' scripts; the workers run scripts by SHA only, and list no keys", () => {
    const scriptRights = (c: Component): string[] => [...allowed(c)].filter((cmd) => /^(eval|evalsha|script|function|fcall|scan|keys)\b/.test(cmd)).sort();
    expect(scriptRights('receiver')).toEqual(['eval', 'evalsha', 'scan', 'script|exists', 'script|load']);
    expect(scriptRights('cluster-worker')).toEqual(['evalsha']);
    expect(scriptRights('node-agent')).toEqual(['evalsha']);
    // What script-preload.ts sends: a grant missing here would leave every agent on NOSCRIPT.
    const module = readFileSync(join(ROOT, 'src/adapters/redis/script-preload.ts'), 'utf8');
    expect(new Set([...module.matchAll(/'SCRIPT', '([A-Z]+)'/g)].map((m) => `script|${m[1]!.toLowerCase()}`))).toEqual(
      new Set(['script|exists', 'script|load']),
    );
  });

  it('gives the receiver no blocking pop: it never waits for jobs', () => {
    expect(allowed('receiver').has('bzpopmin')).toBe(false);
  });

  it('gives the receiver WAIT in every rendering (REDIS_ACK_REPLICAS may be set on any topology), and the workers none', () => {
    // replica-ack.ts sends it; without the grant every webhook would wait out its timeout and get 503.
    expect(readFileSync(join(ROOT, 'src/adapters/redis/replica-ack.ts'), 'utf8')).toMatch(/\.wait\(|'WAIT'|"WAIT"/i);
    expect(allowed('receiver').has('wait')).toBe(true);
    expect(allowed('cluster-worker').has('wait')).toBe(false);
    expect(allowed('node-agent').has('wait')).toBe(false);
  });

  it("renders Secrets with each process's own user and password, and only hashes in the ACL", () => {
    const s = redisSecrets({ prefix: 'vm', address: 'redis.example:6380', tls: true, namespace: 'volume-medic' });
    const data = (name: string) => s.find((o) => (o['metadata'] as { name: string }).name === name)!['stringData'] as Record<string, string>;
    const urls = COMPONENTS.map((c) => data(`volume-medic-redis-${c}`)['url']!);
    for (const [i, c] of COMPONENTS.entries()) expect(urls[i]).toMatch(new RegExp(`^rediss://${REDIS_USERS[c]}:[0-9a-f]{64}@redis\\.example:6380$`));
    expect(new Set(urls.map((u) => u.split(':')[2])).size).toBe(3);
    const file = data('volume-medic-redis-acl')['users.acl']!;
    for (const u of urls) expect(file).not.toContain(new URL(u).password);
    expect(file).toContain('~vm:*');
    expect(() => renderRedisAcl({ prefix: 'a* ~*', passwords })).toThrow(/ACL key pattern/);
  });
});
