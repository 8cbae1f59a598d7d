import type { LuaScript } from './lua-script.ts';
import { errText, type RedisServers, type Server } from './redis-servers.ts';

// The receiver loads the scripts the agents run (src/adapters/lua/registry.ts) into the script
// cache of every server of the topology (redis-servers.ts), since the agents' Redis users may only
// EVALSHA them. Redis replicates no SCRIPT LOAD, and a restarted server or one that joins has an
// empty cache: so the check runs at start, after every topology change, every `checkMs`, and when
// an agent enrols (after a restart the per-node users are gone too, and every agent enrols again).
// The check is one SCRIPT EXISTS of every SHA per server; only the missing are loaded. Until
// then an agent's EVALSHA answers NOSCRIPT, which its worker retries (lua-script.ts).
//
// Runs never overlap: a call while one runs waits for the next run, which every such call shares.

export interface PreloadReport {
  /** host:port of every server that has every script now. */
  applied: string[];
  /** Each server that does not, and why (the next check tries again). */
  failed: { server: string; error: string }[];
  /** Scripts loaded by this run, over all servers (0 when every server had them). */
  loaded: number;
}

export interface ScriptPreloadOptions {
  servers: RedisServers;
  scripts: readonly LuaScript[];
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  /** Period of the check started by watch() (default 10 s). */
  checkMs?: number;
}

/** Every script of `scripts` that `server` lacks, loaded there; how many. Throws if a load did not give the SHA expected. */
export async function loadMissing(server: Pick<Server['redis'], 'call'>, scripts: readonly LuaScript[]): Promise<number> {
  if (scripts.length === 0) return 0;
  const present = (await server.call('SCRIPT', 'EXISTS', ...scripts.map((s) => s.sha))) as number[];
  const missing = scripts.filter((_, i) => present[i] !== 1);
  for (const s of missing) {
    const sha = await server.call('SCRIPT', 'LOAD', s.lua);
    if (sha !== s.sha) throw new Error(`SCRIPT LOAD of ${s.name} answered ${String(sha)}, not ${s.sha}`);
  }
  return missing.length;
}

export class ScriptPreload {
  readonly #o: Required<ScriptPreloadOptions>;
  #running: Promise<PreloadReport> | undefined;
  #next: Promise<PreloadReport> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #watching = false;
  #closed = false;

  constructor(o: ScriptPreloadOptions) {
    this.#o = { checkMs: 10_000, ...o };
  }

  /** Every script on every server now (a run already under way is followed by one more, shared). */
  ensure(): Promise<PreloadReport> {
    if (!this.#running) {
      this.#running = this.#run().finally(() => {
        this.#running = undefined;
      });
      return this.#running;
    }
    this.#next ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.ensure();
      });
    return this.#next;
  }

  async #run(): Promise<PreloadReport> {
    const { all } = await this.#o.servers.servers();
    const report: PreloadReport = { applied: [], failed: [], loaded: 0 };
    await Promise.all(
      all.map(async (s) => {
        if (s.down) {
          report.failed.push({ server: s.address, error: s.down });
          return;
        }
        try {
          const loaded = await this.#o.servers.withTimeout(s.redis, s.address, () => loadMissing(s.redis, this.#o.scripts));
          report.loaded += loaded;
          report.applied.push(s.address);
        } catch (err) {
          report.failed.push({ server: s.address, error: errText(err) });
        }
      }),
    );
    if (report.loaded > 0) this.#o.log.info({ loaded: report.loaded, servers: report.applied }, "loaded the agents' Redis scripts");
    if (report.failed.length > 0) this.#o.log.warn({ failed: report.failed }, "the agents' Redis scripts are not on every server (checked again)");
    return report;
  }

  /** Checks now, after every topology change and every `checkMs`; returns the first check. */
  watch(): Promise<PreloadReport> {
    if (this.#watching || this.#closed) return this.ensure();
    this.#watching = true;
    this.#o.servers.onChange(() => void this.#check());
    const tick = (): void => {
      this.#timer = setTimeout(() => void this.#check().finally(() => !this.#closed && tick()), this.#o.checkMs);
    };
    tick();
    return this.ensure();
  }

  #check(): Promise<unknown> {
    if (this.#closed) return Promise.resolve();
    return this.ensure().catch((err: unknown) => this.#o.log.warn({ error: errText(err) }, "checking the agents' Redis scripts failed"));
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}
