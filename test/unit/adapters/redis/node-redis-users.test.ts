import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { REDIS_USERS, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { readOnlyRules } from '../../../../src/core/redis-budget/restriction.ts';
import {
  aclCommands,
  CLUSTER_DISCOVERY_COMMANDS,
  NODE_AGENT_COMMANDS,
  nodeOfUserName,
  nodeUserName,
  nodeUserRules,
  nodeUsersKey,
  registryOf,
  serverChanges,
} from '../../../../src/adapters/redis/node-user-acl.ts';

// The per-node Redis user is the shared node-agent user of the ACL template with one change: its
// queue pattern names one node. The live half (glob semantics, NOPERM, every topology) is
// test/int/adapters/redis/node-redis-users.int.test.ts.

const sha = createHash('sha256').update('pw').digest('hex');
const template = renderRedisAcl({ prefix: 'vmp', passwords: { receiver: 'a', 'cluster-worker': 'b', 'node-agent': 'c' } });
const agentRules = template
  .split('\n')
  .find((l) => l.startsWith(`user ${REDIS_USERS['node-agent']} `))!
  .split(' ')
  .slice(2);

describe('per-node Redis users', () => {
  it("grants exactly the commands of the template's shared node-agent user", () => {
    const templateCommands = agentRules.slice(agentRules.indexOf('-@all') + 1);
    expect(templateCommands.length).toBeGreaterThan(40);
    expect(NODE_AGENT_COMMANDS.map((c) => `+${c}`)).toEqual(templateCommands);
    // ...and those a Cluster client needs to find the masters, nothing else.
    const rules = nodeUserRules('vmp', 'a', sha);
    expect(rules.slice(rules.indexOf('-@all') + 1)).toEqual([...templateCommands, '+cluster|slots', '+cluster|info']);
    expect(CLUSTER_DISCOVERY_COMMANDS).toEqual(['cluster|slots', 'cluster|info']);
    // Scripts by SHA only (those the receiver loaded: a node's own never-ending script would freeze
    // the shared Redis), and no listing of other nodes' key names.
    expect(rules).toContain('+evalsha');
    for (const r of ['+eval', '+scan', '+keys', '+script', '+script|load', '+function', '+fcall']) expect(rules, r).not.toContain(r);
  });

  it("has the template's key patterns narrowed: that node's queue, and of the shared keys only the controls, read-only", () => {
    const templateKeys = agentRules.filter((r) => r.startsWith('~') || r.startsWith('%'));
    const rules = nodeUserRules('vmp', 'node-a.example', sha);
    const keys = rules.filter((r) => r.startsWith('~') || r.startsWith('%'));
    expect(templateKeys[0]).toBe('~vmp:vm-node-*');
    const kept = ['%R~vmp:vm:ctl:modes', '%R~vmp:vm:ctl:pause'];
    for (const k of kept) expect(templateKeys).toContain(k);
    expect(keys).toEqual(['~vmp:vm-node-{node-a.example}:*', ...kept]);
    // The shared user of redis.nodeUsers=false still has them; a node's own user not: its
    // statistics are its queue's, and the receiver takes its breaker slots.
    for (const k of ['~vmp:vm:stats', '~vmp:vm:ctl:breaker:*']) {
      expect(templateKeys).toContain(k);
      expect(keys).not.toContain(k);
    }
  });

  it('defines the whole user from nothing: reset first, the password by hash only, no channels, -@all before the commands', () => {
    const rules = nodeUserRules('vmp', 'a', sha);
    expect(rules.slice(0, 4)).toEqual(['reset', 'on', `#${sha}`, 'resetchannels']);
    expect(rules.indexOf('-@all')).toBeLessThan(rules.indexOf('+ping'));
    expect(rules.filter((r) => r.startsWith('>') || r.startsWith('&') || r.startsWith('+@') || r === 'allkeys' || r === 'nopass')).toEqual([]);
  });

  it('refuses a node name that could widen the pattern or end the hash tag, a bad prefix, and anything but a SHA-256', () => {
    for (const bad of ['*', 'a*', 'a?', 'a[b]', 'a}b', 'a b', 'A', '', 'a:b', 'x'.repeat(254)]) {
      expect(() => nodeUserRules('vmp', bad, sha), bad).toThrow(/node name/);
      expect(() => nodeUserName(bad), bad).toThrow(/node name/);
    }
    expect(() => nodeUserRules('v*', 'a', sha)).toThrow(/ACL key pattern/);
    expect(() => nodeUserRules('vmp', 'a', 'pw')).toThrow(/SHA-256/);
    expect(() => nodeUserRules('vmp', 'a', `${sha} >plain`)).toThrow(/SHA-256/);
    expect(() => nodeUserRules('vmp', 'a', sha.toUpperCase())).toThrow(/SHA-256/);
  });

  it('names users so that no node is the shared user and every name survives a REDIS_URL unencoded', () => {
    expect(nodeUserName('agent')).not.toBe(REDIS_USERS['node-agent']);
    expect(nodeUserName('n-1.example')).toBe('volume-medic-node.n-1.example');
    expect(nodeOfUserName(nodeUserName('n-1.example'))).toBe('n-1.example');
    expect(nodeOfUserName(REDIS_USERS['node-agent'])).toBeUndefined();
    expect(nodeOfUserName('volume-medic-node.')).toBeUndefined();
    const u = new URL(`redis://${nodeUserName('n-1.example')}:pw@h:1`);
    expect(u.username).toBe(nodeUserName('n-1.example'));
    expect(nodeUsersKey('vmp')).toBe('vmp:vm:acl:nodes');
  });
});

describe('bringing a server in line with the registry (pure)', () => {
  const other = createHash('sha256').update('other').digest('hex');
  const registry = new Map([
    ['a', sha],
    ['b', other],
  ]);

  it('adds only the registered users a server lacks and deletes the managed users the registry no longer has', () => {
    const users = ['default', REDIS_USERS['node-agent'], nodeUserName('a'), nodeUserName('gone')];
    expect(serverChanges(users, registry, new Set(), false)).toEqual([{ node: 'b', sha: other }, { node: 'gone' }]);
  });

  it('applies every registered user again on a full pass, read-only for a restricted node', () => {
    const users = [nodeUserName('a'), nodeUserName('b')];
    expect(serverChanges(users, registry, new Set(['b']), true)).toEqual([
      { node: 'a', sha },
      { node: 'b', sha: other, readOnly: true },
    ]);
    expect(serverChanges(users, registry, new Set(), false)).toEqual([]);
  });

  it('reads the registry without entries that are not a node name and a SHA-256', () => {
    expect([...registryOf({ a: sha, 'B*': sha, c: 'pw', d: other })]).toEqual([
      ['a', sha],
      ['d', other],
    ]);
  });

  it('pipelines sets and deletes in order, and swaps a restricted user read-only in a command pair of its own', () => {
    const { pipeline, swaps } = aclCommands('vmp', [{ node: 'a', sha }, { node: 'gone' }, { node: 'b', sha: other, readOnly: true }]);
    expect(pipeline).toEqual([
      ['SETUSER', nodeUserName('a'), ...nodeUserRules('vmp', 'a', sha)],
      ['DELUSER', nodeUserName('gone')],
    ]);
    expect(swaps).toEqual([
      [
        ['DELUSER', nodeUserName('b')],
        ['SETUSER', nodeUserName('b'), ...readOnlyRules(nodeUserRules('vmp', 'b', other))],
      ],
    ]);
  });
});
