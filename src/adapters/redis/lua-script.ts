import { type Cluster, Command, type Redis } from 'ioredis';
import { TransientError } from '../../core/errors.ts';
import { createHash } from '../../core/node-crypto.ts';

/** redis.ts' RedisConnection (which imports this module). */
type RedisConnection = Redis | Cluster;

// Lua scripts, run by their SHA-1 only (EVALSHA). A node agent's and the cluster worker's Redis
// users may not EVAL (deploy/charts/volume-medic/files/users.acl.template): a script a node wrote
// itself could loop forever and freeze the Redis the fleet shares (a BUSY server answers nothing
// else, and a script that wrote cannot be killed). What they run is what the receiver loaded
// (SCRIPT LOAD, src/adapters/redis/script-preload.ts, of the registry src/adapters/lua/registry.ts
// on every server of the topology).
//
// ioredis sends a defined script's whole text (EVAL) the first time per socket and after a
// NOSCRIPT; that EVAL would be refused on every new connection of such a user. So every connection
// of ours (redis.ts connect()) defines scripts, ours and BullMQ's, with evalshaFirst(): EVALSHA
// always; only on NOSCRIPT (a server restarted or promoted before the receiver loaded it again)
// one EVAL, which a user with EVAL (the receiver, a test's default user) may run. An agent's user
// gets NOPERM: the call then waits for the receiver's load (EVALSHA again, LOAD_WAITS_MS), and
// fails as transient (ScriptNotLoadedError) only after that: BullMQ's worker fetches again (the
// job stays waiting), a runbook's own call fails the attempt, which is retried.

/** A Lua script of volume-medic's: its command name on a connection, its text and its SHA-1. */
export interface LuaScript {
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
  /** Keys it takes (undefined: the caller passes the count first). */
  readonly numberOfKeys?: number;
}

const sha1 = (lua: string): string => createHash('sha1').update(lua).digest('hex');

/**
 * A script of ours. Any module an agent imports defines its scripts with this and exports them,
 * and src/adapters/lua/registry.ts lists them (test/unit/repo/architecture/agent-scripts.test.ts fails
 * otherwise): a script the receiver does not load would never run for an agent's user.
 */
export function luaScript(name: string, lua: string, numberOfKeys?: number): LuaScript {
  return { name, lua, sha: sha1(lua), ...(numberOfKeys === undefined ? {} : { numberOfKeys }) };
}

type ScriptFn = (...keysAndArgs: (string | number | Buffer)[]) => Promise<unknown>;

/** `script` as a function of `redis` (defined on the connection once, by its name). */
export function scriptOn(redis: RedisConnection, script: LuaScript): ScriptFn {
  const r = redis as unknown as Record<string, unknown>;
  if (typeof r[script.name] !== 'function')
    redis.defineCommand(script.name, { lua: script.lua, ...(script.numberOfKeys === undefined ? {} : { numberOfKeys: script.numberOfKeys }) });
  return (r[script.name] as ScriptFn).bind(redis);
}

/** What this module needs of an ioredis client, a Cluster or a pipeline of either. */
interface Commander {
  scriptsSet: Record<string, unknown>;
  sendCommand(command: Command): unknown;
  isPipeline?: boolean;
  /** A pipeline's connection. */
  redis?: Commander;
  [name: string]: unknown;
}

interface Definition {
  lua: string;
  numberOfKeys?: number;
}

const NOSCRIPT = /\bNOSCRIPT\b/;
const NOPERM = /\bNOPERM\b/;

/**
 * How long a script call waits, between tries, for the receiver to load a script the server lost
 * (it checks every 10 s, and at once when an agent enrols: script-preload.ts): 15 s in all, half
 * a job's lock (LOCK_DURATION_MS, 30 s by default, renewed every 15 s), so a job whose
 * completion met a restarted server is still completed, not taken again as stalled.
 */
const LOAD_WAITS_MS: readonly number[] = [1_000, 2_000, 4_000, 8_000];

/** A script this connection's user may not send was still not loaded after LOAD_WAITS_MS: retried (TransientError). */
export class ScriptNotLoadedError extends TransientError {
  override name = 'ScriptNotLoadedError';
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Args = ConstructorParameters<typeof Command>[1] & unknown[];

function send(client: Commander, name: 'eval' | 'evalsha', args: Args, replyEncoding: 'utf8' | null): Promise<unknown> {
  const c = new Command(name, args, { replyEncoding });
  client.sendCommand(c);
  return c.promise;
}

/**
 * After a NOSCRIPT: EVAL once (the receiver's user, a test's default user may); a user that may
 * not gets NOPERM, and then EVALSHA again after each of `waits`.
 */
async function whenLoaded(client: Commander, name: string, s: Script, rest: Args, enc: 'utf8' | null, waits: readonly number[]): Promise<unknown> {
  try {
    return await send(client, 'eval', [s.lua, ...rest], enc);
  } catch (err) {
    if (!NOPERM.test((err as Error).message)) throw err;
  }
  for (const ms of waits) {
    await sleep(ms);
    try {
      return await send(client, 'evalsha', [s.sha, ...rest], enc);
    } catch (err) {
      if (!NOSCRIPT.test((err as Error).message)) throw err;
    }
  }
  throw new ScriptNotLoadedError(`Redis script ${name} is not loaded on this server, and this user may only run loaded scripts (the receiver loads them)`);
}

interface Script {
  lua: string;
  sha: string;
  numberOfKeys?: number | undefined;
}

function scriptFunction(name: string, s: Script, replyEncoding: 'utf8' | null, waits: readonly number[]) {
  return function (this: Commander, ...args: unknown[]): unknown {
    const callback = typeof args.at(-1) === 'function' ? (args.pop() as (err: Error | null, r?: unknown) => void) : undefined;
    const rest = (typeof s.numberOfKeys === 'number' ? [s.numberOfKeys, ...args] : args) as Args;
    const command = new Command('evalsha', [s.sha, ...rest], { replyEncoding });
    // A pipeline sends the fallback on its connection, outside the pipeline (as ioredis' own scripts do).
    const client = this.isPipeline && this.redis ? this.redis : this;
    command.promise = command.promise.catch((err: Error) => {
      if (!NOSCRIPT.test(err.message)) throw err;
      return whenLoaded(client, name, s, rest, replyEncoding, waits);
    });
    if (callback) command.promise.then((r: unknown) => callback(null, r), callback);
    return this.sendCommand(command);
  };
}

/**
 * Makes every script later defined on `conn` (ioredis' defineCommand: ours through scriptOn,
 * BullMQ's when it loads its commands) go by EVALSHA first, also on its duplicates (BullMQ's
 * blocking connection). Returns `conn`.
 */
export function evalshaFirst<T extends RedisConnection>(conn: T, o: { loadWaitsMs?: readonly number[] } = {}): T {
  const waits = o.loadWaitsMs ?? LOAD_WAITS_MS;
  const c = conn as unknown as Commander & { defineCommand(name: string, d: Definition): void; duplicate(...a: unknown[]): T };
  const duplicate = c.duplicate;
  Object.assign(c, {
    defineCommand(this: Commander, name: string, d: Definition): void {
      const s = { lua: d.lua, sha: sha1(d.lua), numberOfKeys: d.numberOfKeys };
      this.scriptsSet[name] = s;
      this[name] = scriptFunction(name, s, 'utf8', waits);
      this[`${name}Buffer`] = scriptFunction(name, s, null, waits);
    },
    duplicate: (...a: unknown[]): T => evalshaFirst(duplicate.apply(conn, a), o),
  });
  return conn;
}
