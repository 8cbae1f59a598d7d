import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Topology } from './topology.ts';

// The fault schedule: each kind in turn, evenly spaced between the warm-up and the drain, as
// many rounds as fit. A fault is injected at `at`; one that lasts (the API server slow or
// unavailable) ends at `at + lastsMs`; recovery is measured from its end.

const FAULT_KINDS = ['receiver-kill', 'client-kill', 'agent-kill', 'api-503', 'sentinel-failover', 'redis-restart', 'api-slow'] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

export interface PlannedFault {
  kind: FaultKind;
  /** ms after the load started. */
  at: number;
  lastsMs: number;
}

export interface FaultRecord {
  kind: FaultKind;
  /** Epoch ms the fault was injected and ended (for a lasting fault, when it was lifted; else when the injection finished). */
  start: number;
  end: number;
  detail: string;
  /** agent-kill: the job whose step the kill interrupted. */
  job?: string;
}

/** Gaps of at least `minGapMs` between `warmupMs` and `runMs - tailMs`; API faults last `apiMs` (capped to fit before the next). */
export function planFaults(runMs: number, warmupMs: number, tailMs: number, minGapMs: number, apiMs: number): PlannedFault[] {
  const span = runMs - warmupMs - tailMs;
  const n = Math.max(0, Math.floor(span / minGapMs));
  const gap = n > 0 ? span / n : 0;
  return Array.from({ length: n }, (_, i) => {
    const kind = FAULT_KINDS[i % FAULT_KINDS.length]!;
    const lasting = kind === 'api-503' || kind === 'api-slow';
    return { kind, at: Math.round(warmupMs + i * gap), lastsMs: lasting ? Math.min(apiMs, Math.round(gap * 0.8)) : 0 };
  });
}

const admin = (port: number): Redis => {
  const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => null });
  r.on('error', () => {});
  return r;
};

async function until(what: string, f: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Injects one fault; resolves when it is over (a lasting one lifted, a killed process back). */
// long because: one case per fault kind, each a few lines
export async function inject(t: Topology, f: PlannedFault, round: number): Promise<FaultRecord> {
  const start = Date.now();
  const done = (detail: string): FaultRecord => ({ kind: f.kind, start, end: Date.now(), detail });
  switch (f.kind) {
    case 'receiver-kill': {
      const i = round % t.receivers.length;
      await t.receivers[i]!.kill('SIGKILL');
      await sleep(3_000);
      await t.restartReceiver(i);
      return done(`receiver-${i} SIGKILLed, started again after 3 s`);
    }
    case 'client-kill': {
      const port = await t.sentinel.primaryPort();
      const r = admin(port);
      const killed = await r.client('KILL', 'TYPE', 'normal');
      r.disconnect();
      return done(`CLIENT KILL TYPE normal on the primary ${port}: ${killed} connections`);
    }
    case 'agent-kill': {
      // Mid-step: the first real agent to say a step started (its `sleep` runs for STEP_MS).
      const seen = t.real.map((a) => a.lines.length);
      const busy = (): number => t.real.findIndex((a, i) => a.lines.slice(seen[i]).some((l) => l.startsWith('STEP ')));
      await until('a real agent in the middle of a step', async () => busy() >= 0, 60_000);
      const i = busy();
      const agent = t.real[i]!;
      const step = agent.lines.slice(seen[i]).find((l) => l.startsWith('STEP '))!;
      await agent.kill('SIGKILL');
      await sleep(2_000);
      await t.startRealAgent(i);
      return { ...done(`real-agent-${i} SIGKILLed during ${step.slice(5)}, started again after 2 s`), job: step.split(' ')[1]! };
    }
    case 'api-503':
    case 'api-slow': {
      t.kube.proc.send(f.kind === 'api-503' ? { mode: '503' } : { mode: 'slow', delayMs: 3_000 });
      await sleep(f.lastsMs);
      t.kube.proc.send({ mode: 'ok' });
      return done(`API server ${f.kind === 'api-503' ? 'answering 503' : 'answering after 3 s'} for ${Math.round(f.lastsMs / 1000)} s`);
    }
    case 'sentinel-failover': {
      const before = await t.sentinel.primaryPort();
      const s = admin(t.sentinel.sentinels[0]!);
      await s.call('SENTINEL', 'FAILOVER', t.sentinel.name);
      s.disconnect();
      await until('the failover', async () => (await t.sentinel.primaryPort()) !== before, 30_000);
      return done(`SENTINEL FAILOVER: primary ${before} -> ${await t.sentinel.primaryPort()}`);
    }
    case 'redis-restart': {
      const port = await t.sentinel.primaryPort();
      await t.redisServers.get(port)!.crash();
      await until('a replica promoted', async () => (await t.sentinel.primaryPort()) !== port, 30_000);
      const promoted = await t.sentinel.primaryPort();
      t.redisServers.set(port, await t.sentinel.restartAsReplica(port));
      return done(`primary ${port} SIGKILLed; ${promoted} promoted; ${port} started again as its replica`);
    }
  }
}
