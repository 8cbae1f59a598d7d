import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlsSummary } from '../../../../src/adapters/controls/status.ts';
import { AgentStore } from '../../../../src/adapters/jobstore/agent-store.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { KubeCoordination } from '../../../../src/adapters/kube/kube-coordination.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import type { LocalPvPlaceholderJob, RunbookName } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import type { RunbookRegistry } from '../../../../workers/engine/registry.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { RunbookDefinition, PlannedStep } from '../../../../workers/engine/runbook.ts';
import { createRunbookWorker, type RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { expectOk } from '../../../../workers/host/command-failed.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { type FakeKubeApi, startFakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { type TestJobs, testJobs } from '../../../testkit/jobs.ts';

// A job through the runbook worker while kured holds its reboot lock for the job's node: the job
// is parked (reason coordination, listed with the controls' parked jobs, its progress and log
// saying why), the destructive step has not run, the worker's in-progress gauge stays 0; once
// kured releases the lock the job wakes at its recheck and succeeds, and the gauge said 1 for
// the node while it acted.

const NODE = 'worker-coord';
const LOCK = 'weave.works/kured-node-lock';
const KURED = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kured', namespace: 'kube-system' } };
const job: LocalPvPlaceholderJob = {
  version: 1,
  key: 'lpv_coord_0123456789ab',
  runbook: 'local-pv-placeholder',
  action: 'place',
  target: { node: NODE, pv: 'pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
  evidence: [{ source: 'api', summary: 'test', raw: {} }],
};
type Step = PlannedStep & { file: string };
const toy: RunbookDefinition<'local-pv-placeholder', object, Step> = {
  runbook: 'local-pv-placeholder',
  observe: async () => ({}),
  plan: () => ({
    kind: 'steps',
    summary: 'wipe b',
    steps: [
      {
        id: 'wipe:b',
        description: 'wipe b',
        destructive: true,
        file: '/work/b',
        evidence: [{ claim: 'b is ours', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
      },
    ],
  }),
  steps: {
    isDone: async (s, host) => (await host.readFile(s.file)) !== null,
    async apply(s, host) {
      expectOk(await host.run(['touch-like', s.file]));
      await host.writeFile(s.file, 'x');
    },
  },
  verify: async () => ({ ok: true, checks: [{ what: 'toy', ok: true }] }),
};

describe('a job whose node kured is rebooting', () => {
  const prefix = uniquePrefix('coordination');
  const host = new FakeHost().on(['touch-like'], { exitCode: 0 });
  let api: FakeKubeApi;
  let redis: RedisConnection;
  let jobs: TestJobs;
  const queue = nodeQueueName(NODE);
  let d: Dispatcher;
  let worker: RunbookWorker;
  const gaugeSeen: string[] = [];

  beforeAll(async () => {
    api = await startFakeKubeApi();
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: {} });
    const lock = JSON.stringify({ nodeID: NODE, metadata: { unschedulable: false }, created: new Date().toISOString(), TTL: 0 });
    api.put({ ...KURED, metadata: { ...KURED.metadata, annotations: { [LOCK]: lock } } });
    redis = producerConnection(redisUrl());
    jobs = testJobs(redis, prefix);
    d = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), knownKeyMaxMs: 0 });
    const registry = {
      'local-pv-placeholder': (j: LocalPvPlaceholderJob, ctx: Parameters<typeof runRunbook>[2]): Promise<RunbookResult> => {
        // The worker's /metrics as they are right when the engine says it acts.
        const acting = (n: string | undefined): void => {
          ctx.acting?.(n);
          gaugeSeen.push(worker.metrics.exposition());
        };
        return runRunbook(toy, j, { ...ctx, acting }, { host, stateDir: '/state' });
      },
    } as unknown as RunbookRegistry;
    const rest = new KubeRest({ server: api.url, token: () => 'fake-token' });
    worker = createRunbookWorker({
      queue,
      store: new AgentStore({ redis: redisUrl(), process: NODE, prefix, log: createLogger('test', 'silent') }),
      ranOn: NODE,
      registry,
      modeOf: (_r: RunbookName) => 'enforce',
      accepts: () => undefined,
      lockDurationMs: 30_000,
      log: createLogger('test', 'silent'),
      controls: {
        node: NODE,
        caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 600_000 },
        recheckMs: 60_000,
        approvalTtlMs: 60_000,
        approval: { highRisk: false, runbooks: [], maxDestructiveSteps: 0 },
      },
      coordination: {
        check: new KubeCoordination({ get: (p, q) => rest.get(p, q), kured: { namespace: 'kube-system', name: 'kured' }, medik8sNamespaces: [] }),
        recheckMs: 1_000,
      },
    });
  });
  afterAll(async () => {
    await worker.close();
    await d.close();
    await jobs.close();
    redis.disconnect();
    await api.close();
    await dropPrefix(prefix);
  });

  it('waits parked (reason coordination) with kured named, then goes on and succeeds once the lock is released', async () => {
    await d.enqueue([job]);
    const parked = await waitFor(
      'job parked on coordination',
      async () => {
        const p = (await jobs.get(queue, job.key))?.progress as { parked?: { reason: string; why: string } } | undefined;
        return p?.parked?.reason === 'coordination' ? p.parked : undefined;
      },
      10_000,
    );
    expect(parked.why).toMatch(/^waiting for kured \(holds the reboot lock for worker-coord: weave\.works\/kured-node-lock on daemonset kube-system\/kured\)$/);
    expect((await controlsSummary(redis, prefix)).parked.coordination).toBe(1);
    expect((await jobs.store.logs(queue, job.key, 10)).lines.some((l) => l.includes('waiting (coordination)') && l.includes('kured'))).toBe(true);
    expect(host.commands.filter((c) => c[0] === 'touch-like')).toEqual([]);
    expect(worker.metrics.exposition()).not.toMatch(/volume_medic_node_remediation_in_progress\{node="worker-coord"\} 1/);

    api.put(KURED);
    await waitFor('job finished', async () => (await jobs.get(queue, job.key))?.finishedOn, 10_000);
    expect((await jobs.get(queue, job.key))?.returnvalue).toMatchObject({ outcome: 'succeeded' });
    expect(host.commands.filter((c) => c[0] === 'touch-like')).toEqual([['touch-like', '/work/b']]);
    expect((await controlsSummary(redis, prefix)).parked.coordination).toBe(0);
    // 1 for the node while its destructive step ran; back to 0 once the job ended.
    expect(gaugeSeen.join('\n')).toMatch(/volume_medic_node_remediation_in_progress\{node="worker-coord"\} 1/);
    expect(worker.metrics.exposition()).toMatch(/volume_medic_node_remediation_in_progress\{node="worker-coord"\} 0/);
  });
});
