import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

// Child processes for benchmarks and fault tests: each server runs in its own process, so the
// load generator's CPU is not the server's, and so a test can SIGKILL it.

export interface Child {
  proc: ChildProcess;
  /** Lines the child wrote on stdout so far. */
  lines: string[];
  /** Resolves with the first stdout line starting with `prefix` (rest of the line). */
  waitLine(prefix: string, timeoutMs?: number): Promise<string>;
  /** Resident set size in MiB, from /proc. */
  rssMiB(): number;
  /** CPU time used so far (user + system, all threads) in ms, from /proc (10 ms resolution). */
  cpuMs(): number;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export interface ChildOptions {
  /** `lines`: stdout is read line by line (waitLine); `ignore`: it goes to /dev/null (a server's logs under load). */
  stdout?: 'lines' | 'ignore';
  /** Node flags before the script (e.g. the node agent's V8 flags from its manifest). */
  execArgv?: readonly string[];
  /**
   * An IPC channel to the child (default true: announce() and `ready` messages). false for a child
   * whose memory is measured: the channel loads Node's child-process messaging into it.
   */
  ipc?: boolean;
}

/** Resident set size of a process in MiB, from /proc (NaN once it has exited). */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The child announces readiness either as a stdout line or as an IPC message `{ ready: string }` (see ready()). */
export function startChild(script: string, env: Record<string, string>, opts: ChildOptions = {}): Child {
  const proc = spawn(process.execPath, [...(opts.execArgv ?? []), script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', opts.stdout === 'ignore' ? 'ignore' : 'pipe', 'inherit', ...(opts.ipc === false ? [] : ['ipc' as const])],
  });
  live.add(proc);
  const exited = new Promise<void>((r) =>
    proc.once('exit', () => {
      live.delete(proc);
      r();
    }),
  );
  const lines: string[] = [];
  const waiters: { prefix: string; resolve: (v: string) => void }[] = [];
  const onLine = (line: string): void => {
    lines.push(line);
    for (const w of [...waiters]) {
      if (line.startsWith(w.prefix)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line.slice(w.prefix.length).trim());
      }
    }
  };
  if (proc.stdout) createInterface({ input: proc.stdout }).on('line', onLine);
  // IPC messages count as lines too, so a child whose stdout is ignored can still say READY.
  proc.on('message', (m: unknown) => {
    if (m && typeof m === 'object' && 'line' in m && typeof m.line === 'string') onLine(m.line);
  });
  return {
    proc,
    lines,
    waitLine: (prefix, timeoutMs = 30_000) => {
      const seen = lines.find((l) => l.startsWith(prefix));
      if (seen !== undefined) return Promise.resolve(seen.slice(prefix.length).trim());
      return new Promise((resolve, reject) => {
        const onExit = (code: number | null): void => {
          clearTimeout(t);
          reject(new Error(`${script} exited (${code}) before "${prefix}"`));
        };
        const t = setTimeout(() => {
          proc.off('exit', onExit);
          reject(new Error(`${script}: no line "${prefix}" within ${timeoutMs} ms`));
        }, timeoutMs);
        proc.once('exit', onExit);
        waiters.push({
          prefix,
          resolve: (v) => {
            clearTimeout(t);
            proc.off('exit', onExit);
            resolve(v);
          },
        });
      });
    },
    rssMiB: () => rssMiB(proc.pid!),
    cpuMs: () => {
      // Fields 14 and 15 of /proc/<pid>/stat (utime, stime) in clock ticks of 10 ms; the command
      // name in parentheses may hold spaces, so count from the closing parenthesis.
      const f = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) * 10;
    },
    kill: async (signal = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill(signal);
      const killer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** In a child: announce a line over IPC (works whatever happens to stdout). */
export function announce(line: string): void {
  if (process.send) process.send({ line });
  else process.stdout.write(`${line}\n`);
}

/**
 * In a child run with --expose-gc: answers each IPC message `heap` with `{ heapUsed }` once full
 * collections have left only what is still referenced (repeated until the figure settles). Does
 * nothing without --expose-gc.
 */
export function answerHeapRequests(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc || !process.send) return;
  const settled = (): number => {
    let last = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 10; i++) {
      gc();
      const used = process.memoryUsage().heapUsed;
      if (Math.abs(last - used) < 64 * 1024) return used;
      last = used;
    }
    return last;
  };
  process.on('message', (m) => {
    if (m === 'heap') setImmediate(() => process.send?.({ heapUsed: settled() }));
  });
}

/** The heap a child (started with --expose-gc, answering with answerHeapRequests) holds after full collections, in bytes. */
export function heapUsedAfterGc(child: Child, timeoutMs = 30_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: unknown): void => {
      if (!m || typeof m !== 'object' || !('heapUsed' in m) || typeof m.heapUsed !== 'number') return;
      clearTimeout(t);
      child.proc.off('message', onMessage);
      resolve(m.heapUsed);
    };
    const t = setTimeout(() => {
      child.proc.off('message', onMessage);
      reject(new Error('no heap answer: was the child started with --expose-gc?'));
    }, timeoutMs);
    child.proc.on('message', onMessage);
    child.proc.send('heap');
  });
}
