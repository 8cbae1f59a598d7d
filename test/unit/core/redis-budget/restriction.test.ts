import { describe, expect, it } from 'vitest';
import { nodeUserRules } from '../../../../src/adapters/redis/node-user-acl.ts';
import { readOnlyRules } from '../../../../src/core/redis-budget/restriction.ts';

describe("a restricted node's Redis user", () => {
  const sha = 'a'.repeat(64);
  it('keeps its password, commands and the keys it reads; every key pattern becomes read-only', () => {
    const rules = nodeUserRules('vm', 'node-a', sha);
    const ro = readOnlyRules(rules);
    expect(ro.filter((r) => !r.includes('~'))).toEqual(rules.filter((r) => !r.includes('~')));
    expect(ro.filter((r) => r.includes('~'))).toEqual(rules.filter((r) => r.includes('~')).map((r) => `%R~${r.slice(r.indexOf('~') + 1)}`));
    expect(ro.some((r) => /^~|%[A-Z]*W/.test(r))).toBe(false);
  });

  it('makes any key grant read-only: ~, %RW~, %W~ (dropped), allkeys', () => {
    expect(readOnlyRules(['on', '~a:*', '%RW~b:*', '%W~c:*', '%R~d', 'allkeys', '+get'])).toEqual(['on', '%R~a:*', '%R~b:*', '%R~d', '%R~*', '+get']);
  });
});
