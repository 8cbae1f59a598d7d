import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { recordName } from '../../../../src/control/console/record-name.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { RECORD_GROUP, RECORD_VERSION } from '../../../../src/control/records/volume-remediation.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { uncoveredByRbac } from '../../../support/kube-objects.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { testSealer } from '../../../support/trust.ts';
import { BullJobStore } from '../../../../src/adapters/jobstore/bull-job-store.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { IncidentIndex } from '../../../../src/adapters/jobstore/incident-index.ts';
import { producerConnection } from '../../../../src/adapters/redis/redis.ts';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { startRecords } from '../../../../src/control/receiver/records-module.ts';
import { startFakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { RECORDS_COLLECTION, volumeRemediationValidator } from '../../../testkit/volume-remediation-crd.ts';

// The receiver keeps the records end to end: jobs stored from an alert on real Redis, read the
// way the console reads them (the incident index, the state scan), one record each in the
// receiver's namespace on the fake API server (every write valid against the chart's CRD), a job
// an agent runs followed to Succeeded, one no agent takes left Waiting, and the job's detail (the
// console's page and `volume-medic show`) naming its record.

const NS = 'volume-medic';
const TOKEN = 'records-webhook-token-0123456789';
const silent = createLogger('test', 'silent');

describe('the receiver keeps a VolumeRemediation per job', () => {
  const prefix = uniquePrefix('records');
  let ops: Operators;
  let receiver: Receiver;
  let agent: RunbookWorker;
  const refused: string[][] = [];
  const config = (over: Partial<Config> = {}) => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], records: true, ...over });
  const stored = (queue: string, id: string) => ops.api.get(`${RECORD_GROUP}/${RECORD_VERSION}`, 'VolumeRemediation', recordName(queue, id), NS);
  const alert = async (node: string, n: number): Promise<string> =>
    (await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved', `records${n}`)]), TOKEN)).json.accepted[0].id;

  beforeAll(async () => {
    ops = await startOperators();
    ops.api.statusSubresource(RECORDS_COLLECTION);
    ops.api.validate(RECORDS_COLLECTION, volumeRemediationValidator(refused));
    receiver = await startReceiver(config({ recordSyncSeconds: 1, consoleUrl: 'https://vm.example.com/', fleetMetricsLeaseSeconds: 2 }), {
      log: silent,
      operatorKubeConfig: ops.api.kubeConfig(),
      lease: { kubeConfig: ops.api.kubeConfig(), namespace: NS },
    });
    agent = createNodeAgent({
      config: config({ nodeName: 'records-a', defaultMode: 'enforce' }),
      registry: {
        'residual-multipath-cleanup': async (_job, ctx) => ({
          runbook: 'residual-multipath-cleanup',
          mode: 'enforce',
          outcome: 'succeeded',
          summary: 'mpatha flushed',
          facts: null,
          plan: null,
          refusals: [],
          steps: [],
          commands: [],
          ranOn: ctx.ranOn,
        }),
      },
      log: silent,
    });
  });
  afterAll(async () => {
    await agent?.close();
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
  });

  it('a job an agent runs ends Succeeded, one nobody takes stays Waiting; both valid, within the RBAC, linked both ways', async () => {
    const ran = await alert('records-a', 1);
    const waits = await alert('records-b', 2);
    const done = await waitFor('the run job recorded Succeeded', async () => {
      const r = stored(nodeQueueName('records-a'), ran);
      return r?.['status']?.phase === 'Succeeded' ? r : undefined;
    });
    expect(done).toMatchObject({
      metadata: { namespace: NS, labels: { 'volume-medic.io/node': 'records-a', 'volume-medic.io/runbook': 'residual-multipath-cleanup' } },
      spec: { jobId: ran, node: 'records-a', runbook: 'residual-multipath-cleanup' },
      status: { jobState: 'completed', mode: 'enforce', outcome: 'succeeded', summary: 'mpatha flushed', consoleURL: `https://vm.example.com/ui/jobs/${ran}` },
    });
    const waiting = await waitFor('the waiting job recorded', async () => {
      const o = stored(nodeQueueName('records-b'), waits);
      return o?.['status'] ? o : undefined;
    });
    expect(waiting['status']).toMatchObject({ phase: 'Waiting', jobState: 'waiting' });

    // The job's detail names its record: the console's page and `volume-medic show` read it.
    const detail = await getJson(`${receiver.url}/v1/jobs/${ran}/incident`, ops.token('olga@example.com'));
    expect(detail.record).toEqual({ name: done['metadata'].name, namespace: NS });

    expect(refused.filter((e) => e.length > 0)).toEqual([]);
    expect(uncoveredByRbac(ops.api.requests, 'receiver')).toEqual([]);
    // What it wrote, on its /metrics.
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(Number(/^volume_medic_records_writes_total\{write="create"\} (\d+)$/m.exec(metrics)?.[1])).toBe(2);
    expect(Number(/^volume_medic_records_writes_total\{write="status"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);
    expect(metrics).toMatch(/^volume_medic_records_rounds_total\{outcome="ok"\} [1-9]/m);
  }, 30_000);
});

describe('only the Lease holder syncs the records', () => {
  it('a follower asks the API server nothing; once it leads it writes the records; when it stops leading it stops', async () => {
    const prefix = uniquePrefix('records-lead');
    const api = await startFakeKubeApi();
    api.statusSubresource(RECORDS_COLLECTION);
    const redis = producerConnection(redisUrl());
    const index = new IncidentIndex(redis, prefix);
    const dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), index });
    const job = (key: string): ResidualMultipathJob => ({
      runbook: 'residual-multipath-cleanup',
      version: 1,
      key,
      target: { node: 'lead-a' },
      evidence: [{ source: 'api', summary: 'test', raw: null }],
    });
    let leading = false;
    const records = startRecords(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, records: true, recordSyncSeconds: 1 }), silent, {
      kubeConfig: api.kubeConfig(),
      namespace: NS,
      leading: () => leading,
      redis,
      jobs: { jobs: new BullJobStore({ redis, prefix, queue: (n) => dispatcher.queue(n) }), incidents: index },
    })!;
    const asked = () => api.requests.filter((r) => r.path.includes('/volumeremediations')).length;
    const recorded = (id: string) => api.get(`${RECORD_GROUP}/${RECORD_VERSION}`, 'VolumeRemediation', recordName(nodeQueueName('lead-a'), id), NS);
    try {
      const [first] = await dispatcher.enqueue([job('lead_first_0000000001')]);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(asked()).toBe(0);
      leading = true;
      // A record is created, then its status written through /status: wait for both.
      const r = await waitFor('the leader to record the job', async () => {
        const o = recorded(first!.id);
        return o?.['status'] ? o : undefined;
      });
      expect(r['status']).toMatchObject({ phase: 'Waiting', jobState: 'waiting' });
      leading = false;
      const [second] = await dispatcher.enqueue([job('lead_second_000000002')]);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(recorded(second!.id)).toBeUndefined();
    } finally {
      await records.close();
      await dispatcher.close();
      redis.disconnect();
      await api.close();
      await dropPrefix(prefix);
    }
  }, 20_000);
});
