import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../support/wait.ts';

// The processes of one release, started as its package.json starts them (`node <entry>.ts`, Node's
// type stripping, the release's tree as working directory): the receiver (src/control/main.ts),
// the cluster worker (workers/cluster-worker/main.ts); node agents are the release's agent code
// behind the upgrade runbook on a fake host (versioned-agent.ts), since the real runbooks need a
// real node's devices.

export type Role = 'receiver' | 'cluster-worker' | 'node-agent';

export interface ReleaseCode {
  /** '0.2.0', '0.3.0': what the effects log and the report name. */
  version: string;
  /** The tree its processes run from. */
  root: string;
  /** A previous release's tree (versioned-agent.ts loads its code from there); false: this one. */
  previous: boolean;
}

export interface FleetProcess {
  role: Role;
  version: string;
  name: string;
  child: ChildProcess;
  /** The receiver's base URL, the cluster worker's probe server. */
  url: string;
  output(): string;
  /** SIGTERM, and the exit code (null: killed by a signal). */
  stop(): Promise<number | null>;
  /** SIGKILL (a pod past its grace period), once it has exited. */
  kill(): Promise<void>;
}

export const THIS_TREE = fileURLToPath(new URL('../../..', import.meta.url));
const AGENT_SCRIPT = fileURLToPath(new URL('./versioned-agent.ts', import.meta.url));
const KEEP_OUTPUT = 200_000;

// One exit hook for every process started here: none outlives the test run.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

function spawnProcess(
  role: Role,
  code: ReleaseCode,
  name: string,
  argv: string[],
  env: Record<string, string>,
  ready: (out: string) => string | undefined,
): Promise<FleetProcess> {
  const child = spawn(process.execPath, argv, {
    cwd: code.root,
    env: { ...process.env, KUBERNETES_SERVICE_HOST: '', KUBECONFIG: '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const take = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 2 * KEEP_OUTPUT) out = out.slice(-KEEP_OUTPUT);
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  live.add(child);
  const exited = once(child, 'exit').then(([code]) => {
    live.delete(child);
    return code as number | null;
  });
  return waitFor(
    `${code.version} ${name} to start`,
    async () => {
      if (child.exitCode !== null) throw new Error(`${code.version} ${name} exited ${child.exitCode}: ${out.slice(-2000)}`);
      return ready(out);
    },
    60_000,
  ).then((url) => ({
    role,
    version: code.version,
    name,
    child,
    url,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  }));
}

export interface Shared {
  redisUrl: string;
  prefix: string;
  keysDir: string;
  tokenFile: string;
  /** Every process: no cap on destructive steps (hundreds of jobs a minute on a few nodes). */
  env?: Record<string, string>;
}

const NO_BREAKERS = { BREAKER_NODE_DESTRUCTIVE_PER_HOUR: '0', BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR: '0', BREAKER_STORM_NODES: '0' };

export function startReceiver(code: ReleaseCode, name: string, s: Shared): Promise<FleetProcess> {
  return spawnProcess(
    'receiver',
    code,
    name,
    ['src/control/main.ts'],
    {
      ...NO_BREAKERS,
      REDIS_URL: s.redisUrl,
      QUEUE_PREFIX: s.prefix,
      SIGNING_KEYS_DIR: s.keysDir,
      VOLUME_MEDIC_TOKEN_FILE: s.tokenFile,
      PORT: '0',
      LISTEN_ADDRESS: '127.0.0.1',
      ALLOW_PLAINTEXT_HTTP: 'true',
      KUBE_WATCH: 'false',
      OPERATOR_AUTH: 'off',
      ...s.env,
    },
    (out) => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1],
  );
}

export function startClusterWorker(code: ReleaseCode, s: Shared): Promise<FleetProcess> {
  return spawnProcess(
    'cluster-worker',
    code,
    'cluster worker',
    ['workers/cluster-worker/main.ts'],
    {
      ...NO_BREAKERS,
      REDIS_URL: s.redisUrl,
      QUEUE_PREFIX: s.prefix,
      SIGNING_KEYS_DIR: s.keysDir,
      PROBE_PORT: '0',
      PROBE_LISTEN_ADDRESS: '127.0.0.1',
      STATE_DIR: mkdtempSync(join(tmpdir(), 'vm-upgrade-cw-')),
      ...s.env,
    },
    (out) => {
      const port = /"port":(\d+),"msg":"probe server listening/.exec(out)?.[1];
      return port && /"msg":"cluster worker started"/.test(out) ? `http://127.0.0.1:${port}` : undefined;
    },
  );
}

/** What every node agent of the fleet is given: its Redis, keys, node and fake host. */
const nodeAgentEnv = (node: string, hostRoot: string, s: Shared): Record<string, string> => ({
  REDIS_URL: s.redisUrl,
  QUEUE_PREFIX: s.prefix,
  SIGNING_KEYS_DIR: s.keysDir,
  NODE_NAME: node,
  HOST_ROOT: hostRoot,
  STATE_DIR: join(hostRoot, 'var/lib/volume-medic'),
});

/** A node agent of `code` for `node`, acting on the fake host at `hostRoot`. */
export function startNodeAgent(code: ReleaseCode, node: string, hostRoot: string, s: Shared, env: Record<string, string> = {}): Promise<FleetProcess> {
  mkdirSync(join(hostRoot, 'var/log'), { recursive: true });
  return spawnProcess(
    'node-agent',
    code,
    `node agent of ${node}`,
    [AGENT_SCRIPT],
    {
      ...nodeAgentEnv(node, hostRoot, s),
      AGENT_VERSION: code.version,
      RELEASE_ROOT: code.previous ? code.root : '',
      ...s.env,
      ...env,
    },
    (out) => (/^READY$/m.test(out) ? 'ready' : undefined),
  );
}

/**
 * The release's own node agent entry point (workers/node-agent/main.ts, its real runbooks and
 * self-checks) on a fake host: it is started, replaced and stopped with the others, to show both
 * releases' agents start and stop with the settings given here; no alert names its node.
 */
export function startEntryPointAgent(code: ReleaseCode, node: string, hostRoot: string, s: Shared): Promise<FleetProcess> {
  return spawnProcess(
    'node-agent',
    code,
    `node agent entry point of ${node}`,
    ['workers/node-agent/main.ts'],
    {
      ...nodeAgentEnv(node, hostRoot, s),
      PROBE_PORT: '0',
      PROBE_LISTEN_ADDRESS: '127.0.0.1',
      ...s.env,
    },
    (out) => {
      const port = /"port":(\d+),"msg":"probe server listening/.exec(out)?.[1];
      return port && /"msg":"node agent started"/.test(out) ? `http://127.0.0.1:${port}` : undefined;
    },
  );
}
