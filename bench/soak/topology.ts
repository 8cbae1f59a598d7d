import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { writeKubeconfig } from '../../test/support/kubeconfig-file.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild, type Child } from '../../test/support/child.ts';
import { startSentinelSet, type LocalSentinelSet, type Server } from '../../test/support/redis-topology.ts';
import { writeSigningKeys } from '../../scripts/lib/signing-keys.ts';
import { startBalancer, type Balancer } from './balancer.ts';

// What the soak runs: Redis under Sentinel (a primary, two replicas, three sentinels), the fake
// API server behind its fault front, two real receivers behind the loopback balancer, the
// simulated fleet (bench/servers/fleet-agents.ts, the real createNodeAgent per node) and a few
// real node agents (./servers/real-agent.ts) on hosts rooted in temporary directories. Every
// process is started here, by PID, and can be killed and started again by the fault schedule.

export interface SoakShape {
  /** Simulated agents (nodes soak-00000...), spread over `fleetProcs` processes. */
  agents: number;
  fleetProcs: number;
  /** Real agents (nodes soak-real-0...). */
  realAgents: number;
  /** How long each of a real agent's three steps takes. */
  stepMs: number;
  /** REDIS_ACK_REPLICAS of the receivers (of the two replicas). */
  ackReplicas: number;
}

export const PREFIX = 'soak';
export const fleetNode = (i: number): string => `soak-${String(i).padStart(5, '0')}`;
export const realNode = (i: number): string => `soak-real-${i}`;

const here = (p: string): string => new URL(p, import.meta.url).pathname;

export interface Topology {
  sentinel: LocalSentinelSet;
  /** Every Redis server by port (a restarted one replaces its predecessor). */
  redisServers: Map<number, Server>;
  balancer: Balancer;
  kube: Child;
  receivers: Child[];
  fleet: Child[];
  real: Child[];
  /** Every real agent process started, killed ones included (their lines are the soak's record). */
  realLives: { node: string; child: Child }[];
  /** Host root of real agent `i` (its effects log and journal live there). */
  hostRoot(i: number): string;
  /** Every process to watch, by a stable name (a restarted process keeps its name, with a new PID). */
  processes(): { name: string; pid: number }[];
  restartReceiver(i: number): Promise<void>;
  startRealAgent(i: number): Promise<Child>;
  stop(): Promise<void>;
}

/** REDIS_* and Kubernetes settings of the harness's own environment would reach every child: the soak sets its own. */
function cleanEnvironment(): void {
  for (const k of Object.keys(process.env)) {
    if (k.startsWith('REDIS_') || k === 'KUBECONFIG' || k === 'KUBERNETES_SERVICE_HOST') delete process.env[k];
  }
}

// long because: one process kind after the other, each needing the previous ones' addresses
export async function startTopology(shape: SoakShape, log: (line: string) => void): Promise<Topology> {
  cleanEnvironment();
  const dir = mkdtempSync(join(tmpdir(), 'vm-soak-'));
  const keys = writeSigningKeys(join(dir, 'keys'));
  const sentinel = await startSentinelSet('soakprimary', { replicas: 2 });
  const redisServers = new Map<number, Server>([sentinel.primary, ...sentinel.replicas].map((s) => [s.port, s]));
  log(`redis: primary ${sentinel.primary.port}, replicas ${sentinel.replicas.map((r) => r.port).join(', ')}, sentinels ${sentinel.env}`);
  // The breakers off: the soak's load is thousands of recoveries an hour on a few hundred nodes,
  // which they exist to stop (their own tests and the enrolled storm bench check them).
  const breakersOff = { BREAKER_STORM_NODES: '0', BREAKER_NODE_DESTRUCTIVE_PER_HOUR: '0', BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR: '0' };
  const redisEnv = { REDIS_SENTINELS: sentinel.env, REDIS_SENTINEL_NAME: sentinel.name, QUEUE_PREFIX: PREFIX, SIGNING_KEYS_DIR: keys, ...breakersOff };

  const realNodes = Array.from({ length: shape.realAgents }, (_, i) => realNode(i));
  const kube = startChild(here('./servers/kube-api.ts'), { KUBE_NODES: realNodes.join(',') });
  const kubeconfig = writeKubeconfig(dir, await kube.waitLine('URL '), { token: 'soak-token', namespace: 'volume-medic' });

  const receiverEnv = {
    ...redisEnv,
    LOG_LEVEL: 'error',
    VOLUME_MEDIC_TOKEN: SOAK_TOKEN,
    ENQUEUE_TIMEOUT_MS: '3000',
    REDIS_ACK_REPLICAS: String(shape.ackReplicas),
  };
  const startReceiverProc = async (): Promise<{ child: Child; port: number }> => {
    const child = startChild(here('../servers/receiver.ts'), receiverEnv, { stdout: 'ignore' });
    const url = await child.waitLine('READY ', 60_000);
    return { child, port: Number(new URL(url).port) };
  };
  const started = await Promise.all([startReceiverProc(), startReceiverProc()]);
  const receivers = started.map((s) => s.child);
  const balancer = await startBalancer(started.map((s) => s.port));
  log(`receivers on ${started.map((s) => s.port).join(', ')} behind ${balancer.url}`);

  const fleet: Child[] = [];
  const per = Math.ceil(shape.agents / shape.fleetProcs);
  for (let from = 0; from < shape.agents; from += per) {
    const stateDir = join(dir, 'fleet-state');
    mkdirSync(stateDir, { recursive: true });
    fleet.push(
      startChild(
        here('../servers/fleet-agents.ts'),
        {
          ...redisEnv,
          FLEET_FROM: String(from),
          FLEET_TO: String(Math.min(shape.agents, from + per)),
          FLEET_KIND: 'ours',
          FLEET_NAME: 'soak',
          STATE_DIR: stateDir,
          FLEET_HEAP_EVERY_MS: '30000',
        },
        { execArgv: ['--expose-gc'] },
      ),
    );
  }
  await Promise.all(fleet.map((f) => f.waitLine('READY ', 300_000)));
  log(`${shape.agents} simulated agents in ${fleet.length} processes`);

  const hostRoot = (i: number): string => join(dir, `host-${i}`);
  const real: Child[] = [];
  const realLives: { node: string; child: Child }[] = [];
  const startRealAgent = async (i: number): Promise<Child> => {
    mkdirSync(join(hostRoot(i), 'var/log'), { recursive: true });
    const child = startChild(here('./servers/real-agent.ts'), {
      ...redisEnv,
      NODE_NAME: realNode(i),
      HOST_ROOT: hostRoot(i),
      STATE_DIR: join(hostRoot(i), 'var/lib/volume-medic'),
      KUBECONFIG: kubeconfig,
      DEFAULT_MODE: 'enforce',
      LOCK_DURATION_MS: '2000',
      COORDINATION_RECHECK_SECONDS: '3',
      STEP_MS: String(shape.stepMs),
      LOG_LEVEL: 'error',
    });
    real[i] = child;
    realLives.push({ node: realNode(i), child });
    await child.waitLine('READY', 60_000);
    return child;
  };
  for (let i = 0; i < shape.realAgents; i++) await startRealAgent(i);
  log(`${shape.realAgents} real agents`);

  return {
    sentinel,
    redisServers,
    balancer,
    kube,
    receivers,
    fleet,
    real,
    realLives,
    hostRoot,
    processes: () => [
      ...[...redisServers.values()].map((s) => ({ name: `redis:${s.port}`, pid: s.proc.pid! })),
      ...sentinel.sentinelServers.map((s) => ({ name: `sentinel:${s.port}`, pid: s.proc.pid! })),
      { name: 'kube-api', pid: kube.proc.pid! },
      ...receivers.map((c, i) => ({ name: `receiver-${i}`, pid: c.proc.pid! })),
      ...fleet.map((c, i) => ({ name: `fleet-${i}`, pid: c.proc.pid! })),
      ...real.map((c, i) => ({ name: `real-agent-${i}`, pid: c.proc.pid! })),
    ],
    restartReceiver: async (i) => {
      const s = await startReceiverProc();
      receivers[i] = s.child;
      balancer.set(i, s.port);
    },
    startRealAgent,
    stop: async () => {
      await balancer.close();
      await Promise.allSettled([...receivers, ...fleet, ...real, kube].map((c) => c.kill('SIGKILL')));
      sentinel.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const SOAK_TOKEN = 'soak-webhook-token-0123456789abcdef';
