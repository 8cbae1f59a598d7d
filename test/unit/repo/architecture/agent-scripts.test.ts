import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentScripts, OWN_SCRIPTS } from '../../../../src/adapters/lua/registry.ts';
import type { LuaScript } from '../../../../src/adapters/redis/lua-script.ts';

// The agents' Redis users may not EVAL (deploy/charts/volume-medic/files/users.acl.template): they
// run, by EVALSHA, the scripts the receiver loads on every server, src/adapters/lua/registry.ts.
// So every module a node agent or the cluster worker can import (statically or on first use) runs
// Lua only as a registered script: defined with luaScript() and exported under a name the registry
// lists, run through scriptOn() (or BullMQ's own, which the registry takes from BullMQ itself),
// never by EVAL. A new `.eval(` or an unregistered script on that path fails here, not in a
// cluster where the agent would get NOSCRIPT forever.

const ROOT = join(import.meta.dirname, '../../../..');
const IMPORT = /(?:^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?'([^']+)'|import\(\s*'([^']+)'\s*\))/gm;

/** Our modules reached from `entry` by value imports, static and dynamic: repo-relative paths. */
function closure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    const rel = relative(ROOT, file);
    if (seen.has(rel)) return;
    seen.add(rel);
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const spec = m[1] ?? m[2];
      if (spec?.startsWith('.')) visit(resolve(dirname(file), spec));
    }
  };
  visit(join(ROOT, entry));
  return seen;
}

const agentModules = [...new Set([...closure('workers/node-agent/main.ts'), ...closure('workers/cluster-worker/main.ts')])].sort();
const source = (rel: string): string =>
  readFileSync(join(ROOT, rel), 'utf8')
    .split('\n')
    .filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l))
    .join('\n');

/** Ways of running Lua other than a registered script. */
const RAW_LUA = /\.(eval|evalsha|evalBuffer|evalshaBuffer|evalRo|evalshaRo)\(|\bdefineCommand\(|'(EVAL|EVALSHA|eval|evalsha)'|"(EVAL|EVALSHA)"/;
/** The one module that defines scripts on a connection (and the EVAL fallback after a NOSCRIPT). */
const SCRIPT_HELPER = 'src/adapters/redis/lua-script.ts';
/** Where luaScript() is called other than as `export const X = luaScript(`: the batch add wraps BullMQ's add script (bullmq-scripts.ts lists it). */
const BUILT_SCRIPTS = new Set(['src/adapters/jobstore/batch-add.ts']);

describe("the Lua the agents run is the receiver's to load", () => {
  it('sees the modules of a job and of both agents (the closure is not empty)', () => {
    for (const m of [
      'workers/engine/job-controls.ts',
      'src/adapters/controls/approval-store.ts',
      'src/adapters/controls/audit-append.ts',
      'src/adapters/jobstore/agent-presence.ts',
      'src/adapters/jobstore/batch-add.ts',
      'workers/cluster-worker/no-agent-watch.ts',
    ])
      expect(agentModules, m).toContain(m);
  });

  it("runs no Lua on the agents' path but through a registered script: no EVAL, no defineCommand of its own", () => {
    const raw = agentModules.filter((m) => m !== SCRIPT_HELPER && RAW_LUA.test(source(m)));
    expect(raw).toEqual([]);
    // The check would see one: the console's reads (receiver only) still EVAL.
    expect(RAW_LUA.test(source('src/adapters/jobstore/queue-scan.ts'))).toBe(true);
  });

  it("lists every script a module on the agents' path defines", async () => {
    const registered = new Set(agentScripts().map((s) => s.sha));
    const defined: string[] = [];
    for (const m of agentModules) {
      const text = source(m);
      const calls = [...text.matchAll(/\bluaScript\(/g)].length - (m === SCRIPT_HELPER ? 1 : 0);
      if (calls === 0 || BUILT_SCRIPTS.has(m)) continue;
      const exported = [...text.matchAll(/^export const (\w+) = luaScript\(/gm)].map((x) => x[1]!);
      expect(exported.length, `${m}: every luaScript() is an exported const`).toBe(calls);
      const mod = (await import(join(ROOT, m))) as Record<string, LuaScript>;
      for (const name of exported) {
        defined.push(`${m} ${name}`);
        expect(registered.has(mod[name]!.sha), `${m}: ${name} is not in src/adapters/lua/registry.ts`).toBe(true);
      }
    }
    expect(defined.length).toBe(OWN_SCRIPTS.length);
  });

  it("lists every script BullMQ defines on a connection, and the batch add of BullMQ's add script", () => {
    const registered = new Map(agentScripts().map((s) => [s.sha, s]));
    const bullmq = Object.values(createRequire(import.meta.url)('bullmq/dist/cjs/scripts/index.js') as Record<string, { content: string }>);
    expect(bullmq.length).toBeGreaterThan(40);
    const lua = new Set([...registered.values()].map((s) => s.lua));
    expect(bullmq.filter((s) => !lua.has(s.content)).length).toBe(0);
    expect([...registered.values()].filter((s) => s.lua.startsWith("-- volume-medic: BullMQ's addStandardJob, once per job"))).toHaveLength(1);
    // Each once, by its SHA-1 (what EVALSHA names).
    expect(registered.size).toBe(bullmq.length + 1 + OWN_SCRIPTS.length);
  });
});
