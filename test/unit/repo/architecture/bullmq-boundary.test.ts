import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// BullMQ is known behind the JobStore only (src/adapters/jobstore/): dependency-cruiser keeps its
// imports there; this keeps its key names there too (a string that builds `<...>:wait`,
// `:stalled-check`, `:marker`, `:logs`, ...), and its scripts (a Lua `redis.call` on its keys).

const ROOT = join(import.meta.dirname, '../../../..');
const STORE = join('src', 'adapters', 'jobstore');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Code without its comments (a comment may name a key to explain one). */
const code = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** A string ending in one of BullMQ's key suffixes (not a route's `/:param`, not `node:events`). */
const BULLMQ_KEY =
  /['"`][^'"`\n]*(?<!\/|node):(wait|active|delayed|prioritized|completed|failed|paused|stalled-check|stalled|marker|logs|events|meta|limiter|pc)['"`]/;

describe('BullMQ stays behind the job store', () => {
  const outside = ['src', 'workers']
    .flatMap((dir) => files(join(ROOT, dir)))
    .map((f) => relative(ROOT, f))
    .filter((f) => !f.startsWith(STORE));

  it('no file outside src/adapters/jobstore builds a BullMQ key name', () => {
    const found = outside.filter((f) => BULLMQ_KEY.test(code(readFileSync(join(ROOT, f), 'utf8'))));
    expect(found).toEqual([]);
  });

  it('the check sees such a name when there is one (and a comment naming one is not code)', () => {
    expect(BULLMQ_KEY.test(code('const k = `${prefix}:${queue}:wait`;'))).toBe(true);
    expect(BULLMQ_KEY.test(code("const k = prefix + ':stalled-check';"))).toBe(true);
    expect(BULLMQ_KEY.test(code('// a queue (`<prefix>:vm-node-{n}:wait`) hashes by its tag'))).toBe(false);
    expect(BULLMQ_KEY.test(code("r.get('/ui/jobs/:id'); import { once } from 'node:events';"))).toBe(false);
  });
});
