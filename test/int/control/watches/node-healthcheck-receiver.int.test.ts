import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { remediationJobKey } from '../../../../src/control/triage/node-healthcheck.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { verifyJobSeal } from '../../../../src/core/trust/work.ts';
import { agentRuns, writeAgentRuns } from '../../../../src/adapters/jobstore/agent-runs.ts';
import { RUNBOOKS } from '../../../../src/core/catalogue/jobs.ts';
import { ParkedJobs } from '../../../../src/adapters/controls/parked-jobs.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';
import { testConfig } from '../../../support/config.ts';
import { node } from '../../../support/kube-objects.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// The receiver as it starts in a pod with NODE_HEALTHCHECK (the chart's nodeHealthCheck.enabled):
// its composition root wires the VolumeMedicRemediation watch to its own dispatcher, job store and
// status writes. The watch's behaviour is node-healthcheck.int.test.ts's.

const BOOT = '0b6f4c8e-3d2a-4e71-9a55-2f1c7d9e8b40';

describe('a receiver with NODE_HEALTHCHECK', () => {
  let api: FakeKubeApi;
  let receiver: Receiver;
  let redis: Redis;
  let stored: TestJobs;
  const prefix = uniquePrefix('nhc-recv');
  const dir = mkdtempSync(join(tmpdir(), 'vm-nhc-'));
  const before = process.env['KUBECONFIG'];

  beforeAll(async () => {
    api = await startFakeKubeApi();
    api.put(node('worker-1', 'Unknown', BOOT));
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, api.kubeConfig().exportConfig());
    process.env['KUBECONFIG'] = file;
    receiver = await startReceiver(
      testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, kubeWatch: true, nodeHealthCheck: true, kubeReconcileSeconds: 0, fleetMetricsLeaseSeconds: 0 }),
    );
    redis = new Redis(redisUrl());
    stored = testJobs(redis, prefix);
    // worker-1's agent is of this release: it announced what it runs at its start (a node-healthcheck job needs that).
    await writeAgentRuns(redis, prefix, nodeQueueName('worker-1'), agentRuns([...RUNBOOKS], 'worker-1', new Date()));
  });
  afterAll(async () => {
    await receiver?.close();
    await stored?.close();
    redis?.disconnect();
    await api?.close();
    if (before === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = before;
    rmSync(dir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  it("stores the object's job, sealed as every job the receiver stores, and writes its status; deleting the object withdraws the job", async () => {
    const cr = api.put({
      apiVersion: 'volume-medic.io/v1alpha1',
      kind: 'VolumeMedicRemediation',
      metadata: { name: 'worker-1', namespace: 'medik8s', annotations: { 'remediation.medik8s.io/node-name': 'worker-1' } },
      spec: { runbook: 'residual-multipath-cleanup' },
    });
    const key = remediationJobKey(String((cr.metadata as Record<string, unknown>)['uid']));
    const job = await waitFor('the job', () => stored.get(nodeQueueName('worker-1'), key));
    expect(job.data).toMatchObject({ runbook: 'residual-multipath-cleanup', target: { node: 'worker-1' }, evidence: [{ source: 'node-healthcheck' }] });
    // What the node's agent checks before it acts: the receiver's seal, for this queue and job id.
    expect(verifyJobSeal(keyringFor('node-agent', readKeys(TEST_KEYS_DIR)), nodeQueueName('worker-1'), key, job.data, Date.now())).toMatchObject({ ok: true });
    const status = async () => api.get('volume-medic.io/v1alpha1', 'VolumeMedicRemediation', 'worker-1', 'medik8s')?.['status'];
    await waitFor('status Queued', async () => ((await status())?.phase === 'Queued' ? true : undefined));
    expect(await status()).toMatchObject({ jobId: key });
    // Had its agent parked it for an approval, the parked record would list it as waiting: it goes with the job.
    const parked = new ParkedJobs(redis, prefix, () => new Date());
    const queue = nodeQueueName('worker-1');
    await parked.park({
      jobId: key,
      queue,
      runbook: 'residual-multipath-cleanup',
      node: 'worker-1',
      reason: 'approval',
      why: 'test',
      since: new Date().toISOString(),
    });
    api.remove('volume-medic.io/v1alpha1', 'VolumeMedicRemediation', 'worker-1', 'medik8s');
    await waitFor('the job withdrawn', async () => ((await stored.state(nodeQueueName('worker-1'), key)) === 'unknown' ? true : undefined));
    await waitFor('its parked record dropped', async () => ((await parked.parkedJobs()).some((p) => p.jobId === key) ? undefined : true));
  });

  it('holds the job of a node whose agent announced nothing (an older release): no job, the status Queued with the reason, asked again later', async () => {
    api.put(node('worker-2', 'Unknown', BOOT));
    api.put({
      apiVersion: 'volume-medic.io/v1alpha1',
      kind: 'VolumeMedicRemediation',
      metadata: { name: 'worker-2', namespace: 'medik8s', annotations: { 'remediation.medik8s.io/node-name': 'worker-2' } },
      spec: { runbook: 'residual-multipath-cleanup' },
    });
    const status = async () =>
      api.get('volume-medic.io/v1alpha1', 'VolumeMedicRemediation', 'worker-2', 'medik8s')?.['status'] as Record<string, unknown> | undefined;
    await waitFor('status Queued', async () => ((await status())?.['phase'] === 'Queued' ? true : undefined));
    const s = (await status())!;
    expect(s['jobId']).toBeUndefined();
    expect(JSON.stringify(s['conditions'])).toContain("node worker-2's agent does not run node-healthcheck yet");
    expect(await redis.keys(`${prefix}:${nodeQueueName('worker-2')}:*`)).toEqual([]);
  });
});
