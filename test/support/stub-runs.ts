import { spawn } from 'node:child_process';
import { waitFor } from './wait.ts';

// A real node agent process whose runbooks only say that they ran (test/support/stub-agent.ts),
// and what it printed: one `RAN <runbook> <jobId> <mode>` line per run.

/** How many times each job ran, from what the stub agent printed. */
export function ranCounts(out: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of out.split('\n')) {
    const id = /^RAN \S+ (\S+) /.exec(line)?.[1];
    if (id) m.set(id, (m.get(id) ?? 0) + 1);
  }
  return m;
}

export interface StubAgent {
  /** Everything it printed so far. */
  out(): string;
  kill(): void;
}

/**
 * Starts the stub agent with `env` (its Redis settings, QUEUE_PREFIX, NODE_NAME, STATE_DIR...)
 * and none of this process's own REDIS_* settings (exactly one topology); resolves once it is up.
 */
export async function startStubAgent(env: Record<string, string>): Promise<StubAgent> {
  const base: Record<string, string | undefined> = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('REDIS_')) delete base[k];
  const child = spawn(process.execPath, ['test/support/stub-agent.ts'], { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const agent = {
    out: () => out,
    kill: () => {
      child.kill('SIGKILL');
    },
  };
  await waitFor('the agent to start', async () => (out.includes('READY') ? true : undefined));
  return agent;
}
