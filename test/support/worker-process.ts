import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_KEYS_DIR } from './trust.ts';
import { waitFor } from './wait.ts';

// A real node agent or cluster worker (`workers/*/main.ts` as `npm run` starts it), with its
// probe server on a free port (PROBE_PORT=0): the port is read from its start-up log line.

export interface WorkerProcess {
  child: ChildProcess;
  /** The probe server, e.g. http://127.0.0.1:41234. */
  url: string;
  /** stdout and stderr so far. */
  output(): string;
  /** SIGTERM, and the exit code. */
  stop(): Promise<number | null>;
}

export const NODE_AGENT = 'workers/node-agent/main.ts';
export const CLUSTER_WORKER = 'workers/cluster-worker/main.ts';

export async function startWorkerProcess(script: string, env: Record<string, string>): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [script], {
    env: {
      ...process.env,
      KUBERNETES_SERVICE_HOST: '',
      KUBECONFIG: '',
      PROBE_PORT: '0',
      PROBE_LISTEN_ADDRESS: '127.0.0.1',
      LOG_LEVEL: 'info',
      SIGNING_KEYS_DIR: TEST_KEYS_DIR,
      STATE_DIR: mkdtempSync(join(tmpdir(), 'vm-probe-state-')),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const port = await waitFor(
    `${script}'s probe server (output: ${out.slice(-500)})`,
    async () => {
      if (child.exitCode !== null) throw new Error(`${script} exited ${child.exitCode}: ${out.slice(-2000)}`);
      return /"port":(\d+),"msg":"probe server listening/.exec(out)?.[1];
    },
    30_000,
  );
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
