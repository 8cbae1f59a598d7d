import { createHash } from 'node:crypto';
import type { Command, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { shouldRetry } from '../../../../src/core/errors.ts';
import { evalshaFirst, luaScript, ScriptNotLoadedError, scriptOn } from '../../../../src/adapters/redis/lua-script.ts';

// What a connection sends for a defined script (ours or BullMQ's): EVALSHA, and after a NOSCRIPT
// one EVAL, which an agent's user may not send (NOPERM): it then waits for the receiver's load and
// sends EVALSHA again. The live half (real ACLs, a restart, the receiver's load):
// test/int/adapters/lua/agent-scripts.int.test.ts.

const LUA = "return redis.call('GET', KEYS[1])";
const SHA = createHash('sha1').update(LUA).digest('hex');

/** A connection that answers as a server would whose cache holds `loaded`, for a user that may or may not EVAL. */
function fakeConnection(o: { loaded: Set<string>; mayEval: boolean }) {
  const sent: string[] = [];
  const conn = {
    scriptsSet: {} as Record<string, unknown>,
    defineCommand(): void {
      throw new Error('replaced by evalshaFirst');
    },
    duplicate: () => fakeConnection(o).conn,
    sendCommand(c: Command): Promise<unknown> {
      const [first, ...rest] = c.args.map(String);
      sent.push(`${c.name} ${c.name === 'eval' ? 'LUA' : first} ${rest.join(' ')}`);
      if (c.name === 'evalsha' && !o.loaded.has(first!)) c.reject(new Error('NOSCRIPT No matching script. Please use EVAL.'));
      else if (c.name === 'eval' && !o.mayEval) c.reject(new Error("NOPERM User volume-medic-node.a has no permissions to run the 'eval' command"));
      else {
        if (c.name === 'eval') o.loaded.add(SHA);
        c.resolve('value');
      }
      return c.promise;
    },
  };
  return { conn: evalshaFirst(conn as unknown as Redis, { loadWaitsMs: [5, 5, 5] }), sent };
}

describe('scripts on a connection', () => {
  const script = luaScript('vmTestGet', LUA, 1);

  it('run by EVALSHA of their SHA-1, with their key count, never sending the text while the server has it', async () => {
    expect(script.sha).toBe(SHA);
    const { conn, sent } = fakeConnection({ loaded: new Set([SHA]), mayEval: false });
    expect(await scriptOn(conn, script)('k1', 'a1')).toBe('value');
    expect(await scriptOn(conn, script)('k1', 'a1')).toBe('value');
    expect(sent).toEqual([`evalsha ${SHA} 1 k1 a1`, `evalsha ${SHA} 1 k1 a1`]);
    // BullMQ finds them where ioredis keeps them (its own loading, and the batch add reading the text).
    expect((conn.scriptsSet as Record<string, unknown>)['vmTestGet']).toMatchObject({ lua: LUA, sha: SHA });
  });

  it('after a NOSCRIPT send the text once where the user may EVAL (the receiver)', async () => {
    const { conn, sent } = fakeConnection({ loaded: new Set(), mayEval: true });
    expect(await scriptOn(conn, script)('k1')).toBe('value');
    expect(await scriptOn(conn, script)('k1')).toBe('value');
    expect(sent).toEqual([`evalsha ${SHA} 1 k1`, 'eval LUA 1 k1', `evalsha ${SHA} 1 k1`]);
  });

  it("where the user may not (an agent's): wait for the receiver's load and run by SHA then", async () => {
    const loaded = new Set<string>();
    const { conn, sent } = fakeConnection({ loaded, mayEval: false });
    const call = scriptOn(conn, script)('k1');
    await new Promise((r) => setTimeout(r, 7));
    loaded.add(SHA); // the receiver's SCRIPT LOAD
    expect(await call).toBe('value');
    expect(sent.filter((s) => s.startsWith('eval '))).toHaveLength(1);
    expect(sent.at(-1)).toBe(`evalsha ${SHA} 1 k1`);
  });

  it('and fail as transient (retried, never final) when it is still not loaded', async () => {
    const { conn, sent } = fakeConnection({ loaded: new Set(), mayEval: false });
    const err = await scriptOn(conn, script)('k1').catch((e: Error) => e);
    expect(err).toBeInstanceOf(ScriptNotLoadedError);
    expect(shouldRetry(err)).toBe(true);
    expect((err as Error).message).toMatch(/vmTestGet is not loaded/);
    expect(sent.filter((s) => s.startsWith('eval '))).toHaveLength(1);
    expect(sent.filter((s) => s.startsWith('evalsha '))).toHaveLength(4);
  });

  it('keep the rule on a duplicate (BullMQ duplicates its connection for blocking waits)', async () => {
    const { conn } = fakeConnection({ loaded: new Set([SHA]), mayEval: false });
    const dup = conn.duplicate();
    dup.defineCommand('x', { lua: LUA, numberOfKeys: 1 });
    expect((dup as unknown as { scriptsSet: Record<string, { sha: string }> }).scriptsSet['x']?.sha).toBe(SHA);
  });
});
