import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { KubeCoordination } from '../../../../src/adapters/kube/kube-coordination.ts';
import { askCoordination, coordinationFromConfig } from '../../../../workers/engine/coordinate.ts';

const config = {
  coordination: true,
  coordinationRecheckSeconds: 30,
  kuredDaemonSet: 'kube-system/kured',
  kuredLockAnnotation: 'weave.works/kured-node-lock',
  medik8sNamespaces: [],
};
const log = pino({ level: 'silent' });
const read = () => Promise.resolve({});
const NOW = new Date('2026-12-07T13:00:00Z');

describe("an agent's coordination from its configuration", () => {
  it('asks the API server, looking again after COORDINATION_RECHECK_SECONDS', () => {
    const c = coordinationFromConfig(config, read, log);
    expect(c?.check).toBeInstanceOf(KubeCoordination);
    expect(c?.recheckMs).toBe(30_000);
  });

  it('is none with COORDINATION=off, and none without API access', () => {
    expect(coordinationFromConfig({ ...config, coordination: false }, read, log)).toBeUndefined();
    expect(coordinationFromConfig(config, undefined, log)).toBeUndefined();
  });
});

describe("the engine's reading of an answer", () => {
  const ask = (busy: () => Promise<never> | ReturnType<KubeCoordination['busy']>) => askCoordination({ check: { busy }, recheckMs: 30_000 }, 'worker-1', NOW);

  it('goes on when free, and for a job that names no node', async () => {
    expect(await ask(() => Promise.resolve({ busy: false }))).toBeUndefined();
    const busy = () => Promise.resolve({ busy: true as const, who: 'drain' as const, why: 'x' });
    expect(await askCoordination({ check: { busy }, recheckMs: 30_000 }, undefined, NOW)).toBeUndefined();
  });

  it('waits until the recheck when busy, naming who, and when unknown or the port throws', async () => {
    const until = new Date(NOW.getTime() + 30_000);
    expect(await ask(() => Promise.resolve({ busy: true, who: 'kured', why: 'holds the reboot lock for worker-1' }))).toEqual({
      why: 'waiting for kured (holds the reboot lock for worker-1)',
      until,
    });
    expect(await ask(() => Promise.resolve({ unknown: 'HTTP 403' }))).toEqual({
      why: 'waiting: whether another tool acts on worker-1 is unknown (HTTP 403)',
      until,
    });
    expect(await ask(() => Promise.reject(new Error('socket hang up')))).toEqual({
      why: 'waiting: whether another tool acts on worker-1 is unknown (socket hang up)',
      until,
    });
  });
});
