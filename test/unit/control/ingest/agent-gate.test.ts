import { describe, expect, it } from 'vitest';
import { agentRuns, type AgentRuns } from '../../../../src/adapters/jobstore/agent-runs.ts';
import { AgentGate } from '../../../../src/control/ingest/agent-gate.ts';
import { RUNBOOKS, type RemediationJob, type RunbookName } from '../../../../src/core/catalogue/jobs.ts';
import { idempotencyKey } from '../../../../src/core/catalogue/idempotency-keys.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { SignalSource } from '../../../../src/core/catalogue/evidence.ts';
import { StoreUnavailableError } from '../../../../src/core/jobs/job-store.ts';

const evidence = (source: SignalSource) => [{ source, summary: 'test', raw: {} }];
const multipath = (node: string, source: SignalSource = 'alertmanager'): RemediationJob => ({
  version: 1,
  runbook: 'residual-multipath-cleanup',
  key: idempotencyKey('node-recovered', [node, source]),
  target: { node },
  evidence: evidence(source),
});
const readonlyFs = (node: string): RemediationJob => ({
  version: 1,
  runbook: 'readonly-filesystem-recovery',
  key: idempotencyKey('readonly-fs', [node]),
  target: { node },
  evidence: evidence('npd'),
});
const taintRelease = (node: string): RemediationJob => ({
  version: 1,
  runbook: 'out-of-service-taint-release',
  key: idempotencyKey('oos', [node]),
  target: { node },
  taint: { firstSeenAt: '2026-12-07T10:00:00Z' },
  evidence: evidence('k8s-watch'),
});

/** The 0.2.0 agent's registry: what it would announce if it could (it writes nothing). */
const BASELINE: RunbookName[] = ['residual-multipath-cleanup', 'local-pv-placeholder', 'rbd-unmap'];

function gateOver(announced: Record<string, AgentRuns | undefined>, now = { t: 0 }) {
  const reads: string[] = [];
  const gate = new AgentGate(
    async (queue) => {
      reads.push(queue);
      return announced[queue];
    },
    { now: () => now.t },
  );
  return { gate, reads, now };
}

describe('AgentGate', () => {
  it('reads nothing for jobs every supported release runs', async () => {
    const { gate, reads } = gateOver({});
    const jobs = [multipath('w1'), multipath('w2', 'k8s-watch')];
    expect(await gate.admit(jobs)).toEqual({ jobs, ignored: [] });
    expect(reads).toEqual([]);
  });

  it("stores a newer runbook's job on a queue whose agent announces it", async () => {
    const { gate, reads } = gateOver({ [nodeQueueName('w1')]: agentRuns([...RUNBOOKS], 'w1', new Date(0)) });
    const job = readonlyFs('w1');
    expect(await gate.admit([job])).toEqual({ jobs: [job], ignored: [] });
    expect(reads).toEqual([nodeQueueName('w1')]);
  });

  it('holds it, with the reason, where no agent announced anything (a 0.2.0 agent, or none yet), and keeps the baseline jobs beside it', async () => {
    const { gate } = gateOver({});
    const r = await gate.admit([multipath('w1'), readonlyFs('w1'), taintRelease('w1')]);
    expect(r.jobs.map((j) => j.runbook)).toEqual(['residual-multipath-cleanup']);
    expect(r.ignored).toEqual([
      {
        reason: 'agent-too-old',
        source: 'npd',
        detail:
          "node w1's agent does not run readonly-filesystem-recovery yet (an older release, or none started yet): not queued; its own read-only scan finds this once it is upgraded",
      },
      {
        reason: 'agent-too-old',
        source: 'k8s-watch',
        detail:
          "the cluster worker does not run out-of-service-taint-release yet (an older release, or none started yet): not queued; the receiver's Node watch asks again at its next resync once it is upgraded",
      },
    ]);
  });

  it("holds a baseline runbook's job whose evidence source the agent does not announce (node-healthcheck)", async () => {
    const old = { ...agentRuns(BASELINE, 'w1', new Date(0)), sources: ['alertmanager', 'k8s-watch'] };
    const { gate } = gateOver({ [nodeQueueName('w1')]: old });
    const r = await gate.admit([multipath('w1', 'node-healthcheck')]);
    expect(r.jobs).toEqual([]);
    expect(r.ignored[0]).toMatchObject({ reason: 'agent-too-old', source: 'node-healthcheck' });
    expect(r.ignored[0]!.detail).toContain('does not run node-healthcheck yet');
  });

  it('reads a queue once for concurrent asks and remembers an announcement for seconds, its absence for less', async () => {
    const announced: Record<string, AgentRuns | undefined> = {};
    const { gate, reads, now } = gateOver(announced);
    await Promise.all([gate.admit([readonlyFs('w1')]), gate.admit([readonlyFs('w1')])]);
    expect(reads).toHaveLength(1);
    // The agent is upgraded: believed once the absence is forgotten (2 s).
    announced[nodeQueueName('w1')] = agentRuns([...RUNBOOKS], 'w1', new Date(0));
    now.t = 1_000;
    expect((await gate.admit([readonlyFs('w1')])).jobs).toEqual([]);
    now.t = 2_500;
    expect((await gate.admit([readonlyFs('w1')])).jobs).toHaveLength(1);
    expect(reads).toHaveLength(2);
    now.t = 10_000;
    await gate.admit([readonlyFs('w1')]);
    expect(reads).toHaveLength(2);
    now.t = 13_000;
    await gate.admit([readonlyFs('w1')]);
    expect(reads).toHaveLength(3);
  });

  it('answers StoreUnavailable when the announcement cannot be read (the sender retries)', async () => {
    const gate = new AgentGate(async () => {
      throw new Error('connection closed');
    });
    await expect(gate.admit([taintRelease('w1')])).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
