import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';

const TOKEN = 'integration-test-token-0123456789';

describe('receiver with a real Redis', () => {
  const prefix = uniquePrefix('recv');
  let receiver: Receiver;
  let redis: Redis;
  let jobs: TestJobs;
  const ALL = ['waiting', 'delayed', 'active', 'completed', 'failed'] as const;

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    jobs = testJobs(redis, prefix);
    // The cluster as triage's lookups see it: shop/web-0 uses the rbd image its Event names.
    const lookups = new InMemoryLookups([
      {
        name: 'pvc-1',
        volumeMode: 'Filesystem',
        claim: { namespace: 'shop', name: 'data-web-0' },
        rbd: { pool: 'replicapool', image: 'csi-vol-0b3f5f8e' },
      },
    ])
      .addPod({ namespace: 'shop', name: 'web-0', node: 'worker-e', claims: ['data-web-0'], waiting: [] })
      .addClaim({ namespace: 'shop', name: 'data-web-0', volumeName: 'pvc-1', accessModes: ['ReadWriteOnce'] });
    // Job reads are an operator's: OPERATOR_AUTH=insecure here (identity is test/int/control/auth/operator-identity.int.test.ts's subject).
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], operatorAuth: 'insecure' }), {
      lookups,
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await jobs?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it("stores a resolved KubeNodeNotReady as exactly one job on that node's queue", async () => {
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('worker-a', 'resolved')]), TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.accepted).toHaveLength(1);
    expect(r.json.accepted[0]).toMatchObject({
      runbook: 'residual-multipath-cleanup',
      node: 'worker-a',
      queue: 'vm-node-{worker-a}',
      deduplicated: false,
    });
    const stored = await jobs.list(nodeQueueName('worker-a'), ['waiting', 'delayed', 'active']);
    expect(stored).toHaveLength(1);
    expect(stored[0]!.id).toBe(r.json.accepted[0].key);
    expect(stored[0]!.data).toMatchObject({
      runbook: 'residual-multipath-cleanup',
      target: { node: 'worker-a' },
      key: r.json.accepted[0].key,
    });
    expect(stored[0]!.data.evidence[0].source).toBe('alertmanager');
  });

  it('folds 50 concurrent repeats of the same alert into one job and says so', async () => {
    const body = alertmanagerBody([nodeNotReadyAlert('worker-storm', 'resolved')]);
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(`${receiver.url}/v1/alertmanager`, body, TOKEN)));
    expect(answers.every((a) => a.status === 202)).toBe(true);
    const keys = new Set(answers.map((a) => a.json.accepted[0].key));
    expect(keys.size).toBe(1);
    expect(answers.filter((a) => a.json.accepted[0].deduplicated === false)).toHaveLength(1);
    const q = nodeQueueName('worker-storm');
    expect(await jobs.count(q, ALL)).toBe(1);
    // And later repeats (repeat_interval, the HA peer) fold too.
    const later = await post(`${receiver.url}/v1/alertmanager`, body, TOKEN);
    expect(later.json.accepted[0].deduplicated).toBe(true);
    expect(await jobs.count(q, ALL)).toBe(1);
  });

  it('makes two jobs on two queues for two different nodes in one grouped payload', async () => {
    const r = await post(
      `${receiver.url}/v1/alertmanager`,
      alertmanagerBody([nodeNotReadyAlert('worker-b', 'resolved'), nodeNotReadyAlert('worker-c', 'resolved'), nodeNotReadyAlert('worker-d', 'firing')]),
      TOKEN,
    );
    expect(r.status).toBe(202);
    expect(r.json.accepted.map((a: { queue: string }) => a.queue).sort()).toEqual(['vm-node-{worker-b}', 'vm-node-{worker-c}']);
    expect(r.json.ignored).toEqual([expect.objectContaining({ reason: 'alert-still-firing', index: 2 })]);
    for (const n of ['worker-b', 'worker-c']) {
      expect(await jobs.count(nodeQueueName(n), ['waiting'])).toBe(1);
    }
    expect(await jobs.count(nodeQueueName('worker-d'), ALL)).toBe(0);
  });

  it('routes an rbd "is still being used" event to the cluster queue with a pool/image key', async () => {
    const event = {
      metadata: { name: 'web-0.17f0', namespace: 'shop', uid: '6a1e0f52-7f8e-4a59-9d27-3c1c0e1f3b11' },
      involvedObject: { kind: 'Pod', namespace: 'shop', name: 'web-0', uid: '0c5b' },
      reason: 'FailedMount',
      message:
        'MountVolume.MountDevice failed for volume "pvc-1" : rpc error: code = Internal desc = rbd image replicapool/csi-vol-0b3f5f8e is still being used',
      source: { component: 'kubelet', host: 'worker-e' },
      type: 'Warning',
      count: 3,
      clusterName: 'prod',
    };
    const r = await post(`${receiver.url}/v1/events`, [event, event], TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.accepted).toEqual([expect.objectContaining({ runbook: 'rbd-stale-mapping', queue: 'vm-cluster-{cluster}' })]);
    const [job] = await jobs.list('vm-cluster-{cluster}', ['waiting']);
    expect(job!.data.target).toEqual({
      pool: 'replicapool',
      image: 'csi-vol-0b3f5f8e',
      pod: { namespace: 'shop', name: 'web-0' },
      node: 'worker-e',
    });
    expect(job!.data.evidence).toHaveLength(2);
  });

  it("turns an NPD LocalDiskLost condition into a placeholder job on the PV's node", async () => {
    const r = await post(
      `${receiver.url}/v1/npd`,
      {
        node: 'worker-g',
        conditions: [
          { type: 'KernelDeadlock', status: 'False', reason: 'KernelHasNoDeadlock', message: 'kernel has no deadlock' },
          {
            type: 'LocalDiskLost',
            status: 'True',
            reason: 'LocalDiskLost',
            message: 'local PV local-pv-g: /dev/disk/by-id/wwn-0x5000c500aaaa0001 is missing',
            lastTransitionTime: '2026-12-01T03:20:00Z',
          },
        ],
      },
      TOKEN,
    );
    expect(r.status).toBe(202);
    expect(r.json.accepted).toEqual([expect.objectContaining({ runbook: 'local-pv-placeholder', queue: 'vm-node-{worker-g}', node: 'worker-g' })]);
    expect(r.json.ignored).toEqual([expect.objectContaining({ reason: 'condition-not-relevant', index: 0 })]);
    const [job] = await jobs.list(nodeQueueName('worker-g'), ['waiting']);
    expect(job!.data).toMatchObject({
      action: 'place',
      target: { node: 'worker-g', pv: 'local-pv-g', path: '/dev/disk/by-id/wwn-0x5000c500aaaa0001' },
    });
  });

  it('lists jobs and shows one with its evidence through the API', async () => {
    const list = await getJson(`${receiver.url}/v1/jobs?node=worker-a`);
    expect(list.jobs).toHaveLength(1);
    expect(list.jobs[0]).toMatchObject({ runbook: 'residual-multipath-cleanup', node: 'worker-a', state: 'waiting' });
    const one = await getJson(`${receiver.url}/v1/jobs/${list.jobs[0].id}`);
    expect(one).toMatchObject({ id: list.jobs[0].id, key: list.jobs[0].id, attemptsMade: 0, valid: true, target: { node: 'worker-a' } });
    expect(one.evidence[0].summary).toContain('KubeNodeNotReady resolved');
    const missing = await fetch(`${receiver.url}/v1/jobs/nope-none`);
    expect(missing.status).toBe(404);
  });

  it('explains a payload without enqueuing anything', async () => {
    const body = alertmanagerBody([nodeNotReadyAlert('worker-explain', 'resolved'), nodeNotReadyAlert('worker-f', 'firing')]);
    const r = await fetch(`${receiver.url}/v1/explain?source=alertmanager`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(200);
    const e: any = await r.json();
    expect(e.jobs).toEqual([
      expect.objectContaining({
        runbook: 'residual-multipath-cleanup',
        node: 'worker-explain',
        key: expect.stringMatching(/^residual_worker-explain_/),
      }),
    ]);
    expect(e.ignored).toEqual([expect.objectContaining({ reason: 'alert-still-firing' })]);
    expect(await jobs.count(nodeQueueName('worker-explain'), ALL)).toBe(0);
  });

  it('serves health, readiness and metrics without a token', async () => {
    expect((await fetch(`${receiver.url}/healthz`)).status).toBe(200);
    expect(await getJson(`${receiver.url}/readyz`)).toMatchObject({ status: 'ready' });
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(metrics).toMatch(/volume_medic_webhooks_total\{source="alertmanager",outcome="accepted"\} \d+/);
    expect(metrics).toMatch(/volume_medic_jobs_deduplicated_total\{runbook="residual-multipath-cleanup"\} \d+/);
    expect(metrics).toMatch(/volume_medic_signals_ignored_total\{source="alertmanager",reason="alert-still-firing"\} \d+/);
    // No agent takes worker-a's job here: its queue shows it waiting.
    expect(metrics).toMatch(/^volume_medic_queue_jobs\{queue="vm-node-\{worker-a\}",node="worker-a",state="waiting"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(metrics).toMatch(/^volume_medic_redis_up 1$/m);
    expect(metrics).toMatch(/^volume_medic_build_info\{version="[^"]+",commit="[^"]+",node_version="v\d+\.\d+\.\d+"\} 1$/m);
  });
});

describe('receiver logs', () => {
  it('logs each new job once in a "jobs stored" line, and a repeat not at info', async () => {
    const prefix = uniquePrefix('recvlog');
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l));
        cb();
      },
    });
    const receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN] }), {
      log: pino({ level: 'info' }, sink),
    });
    try {
      const body = alertmanagerBody([nodeNotReadyAlert('worker-log', 'resolved', 'fplog1')]);
      const first = await post(`${receiver.url}/v1/alertmanager`, body, TOKEN);
      await post(`${receiver.url}/v1/alertmanager`, body, TOKEN);
      const stored = lines.filter((l) => l['msg'] === 'jobs stored');
      expect(stored).toHaveLength(1);
      expect(stored[0]!['stored']).toEqual([{ id: first.json.accepted[0].id, queue: 'vm-node-{worker-log}', runbook: 'residual-multipath-cleanup' }]);
    } finally {
      await receiver.close();
      await dropPrefix(prefix);
    }
  });
});

describe('receiver when Redis is unreachable', () => {
  it('answers 503 with Retry-After so Alertmanager retries, and /readyz says not ready', async () => {
    const receiver = await startReceiver(testConfig({ redisUrl: 'redis://127.0.0.1:1', queuePrefix: uniquePrefix('down'), enqueueTimeoutMs: 1000 }));
    try {
      const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('worker-x', 'resolved')]));
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      expect((await fetch(`${receiver.url}/readyz`)).status).toBe(503);
      // Bad input is still a 4xx, not a 503: retrying it would not help.
      expect((await post(`${receiver.url}/v1/alertmanager`, undefined, undefined, '{oops')).status).toBe(400);
      // /metrics still answers, with its own series and Redis down.
      const metrics = await fetch(`${receiver.url}/metrics`);
      expect(metrics.status).toBe(200);
      const text = await metrics.text();
      expect(text).toMatch(/^volume_medic_redis_up 0$/m);
      expect(text).toMatch(/^volume_medic_webhooks_total\{source="alertmanager",outcome="unavailable"\} 1$/m);
    } finally {
      await receiver.close();
    }
  });
});
