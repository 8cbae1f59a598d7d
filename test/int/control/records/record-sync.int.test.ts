import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobStateName } from '../../../../src/adapters/jobstore/job-states.ts';
import { CustomRecords } from '../../../../src/adapters/kube/custom-records.ts';
import { DIRECT_CALLS } from '../../../../src/adapters/kube/rbac.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { StoredJob } from '../../../../src/core/jobs/job-store.ts';
import { recordName } from '../../../../src/control/console/record-name.ts';
import { type JobRef, type RecordJobs, RecordSync } from '../../../../src/control/records/record-sync.ts';
import { RECORD_GROUP, RECORD_PLURAL, RECORD_VERSION } from '../../../../src/control/records/volume-remediation.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { RECORDS_COLLECTION, volumeRemediationValidator } from '../../../testkit/volume-remediation-crd.ts';
import { apiCallOf, uncoveredByRbac } from '../../../support/kube-objects.ts';

// The record sync against the fake API server, which holds every write to the chart's CRD schema
// (test/testkit/volume-remediation-crd.ts) and splits status from the rest as the status
// subresource does: a record created for each job, its status following the job to its end
// (success, refusal, a park and its release), deleted after the retention (an injected clock),
// what each job costs in API requests, and nothing outside the receiver's RBAC.

const NS = 'volume-medic';
const HOUR = 3_600_000;
const RETENTION = 168 * HOUR;
const silent = createLogger('test', 'silent');
const QUEUE = nodeQueueName('worker-1');

interface Held {
  ref: JobRef;
  job: StoredJob;
  /** The store's state (what JobReads.state answers). */
  state: string;
  /** What the state scan answers. */
  scan: JobStateName;
  storedAt: number;
}

/** The job store as the sync reads it, in memory: a test moves jobs from state to state. */
class MemoryJobs implements RecordJobs {
  readonly held = new Map<string, Held>();

  add(id: string, at: number): void {
    const job: StoredJob = {
      id,
      name: 'residual-multipath-cleanup',
      data: { runbook: 'residual-multipath-cleanup', version: 1, key: id, target: { node: 'worker-1', wwid: '3600a0b8' }, evidence: [] },
      timestamp: at,
      attemptsMade: 0,
      attemptsStarted: 0,
      attempts: 4,
      progress: {},
    };
    this.held.set(id, { ref: { queue: QUEUE, id }, job, state: 'waiting', scan: 'waiting', storedAt: at });
  }

  move(id: string, state: string, scan: JobStateName, job: Partial<StoredJob> = {}): void {
    const h = this.held.get(id)!;
    this.held.set(id, { ...h, state, scan, job: { ...h.job, ...job } });
  }

  async storedSince(sinceMs: number, max: number): Promise<JobRef[]> {
    return [...this.held.values()]
      .filter((h) => h.storedAt >= sinceMs)
      .sort((a, b) => b.storedAt - a.storedAt)
      .slice(0, max)
      .map((h) => h.ref);
  }

  async states(refs: readonly JobRef[]): Promise<JobStateName[]> {
    return refs.map((r) => this.held.get(r.id)?.scan ?? 'gone');
  }

  async read(_queue: string, id: string): Promise<{ job: StoredJob; state: string } | undefined> {
    const h = this.held.get(id);
    return h ? { job: h.job, state: h.state } : undefined;
  }
}

describe('the VolumeRemediation records of jobs', () => {
  let api: FakeKubeApi;
  let jobs: MemoryJobs;
  let clock: number;
  let refused: string[][];
  const sync = (): RecordSync =>
    new RecordSync({
      records: new CustomRecords(api.kubeConfig(), { group: RECORD_GROUP, version: RECORD_VERSION, plural: RECORD_PLURAL, namespace: NS }),
      jobs,
      namespace: NS,
      consoleUrl: 'https://vm.example.com',
      retentionMs: RETENTION,
      now: () => clock,
      log: silent,
    });
  const stored = (id: string) => api.get(`${RECORD_GROUP}/${RECORD_VERSION}`, 'VolumeRemediation', recordName(QUEUE, id), NS);
  const writes = () => api.writeRequests().filter((r) => r.path.includes(`/${RECORD_PLURAL}`));

  beforeEach(async () => {
    api = await startFakeKubeApi();
    api.statusSubresource(RECORDS_COLLECTION);
    refused = [];
    api.validate(RECORDS_COLLECTION, volumeRemediationValidator(refused));
    jobs = new MemoryJobs();
    clock = Date.parse('2026-12-07T03:00:00Z');
  });
  afterEach(async () => {
    // Every write the sync made was valid against the chart's CRD schema.
    expect(refused.filter((e) => e.length > 0)).toEqual([]);
    expect(uncoveredByRbac(api.requests, 'receiver')).toEqual([]);
    await api.close();
  });

  it('creates a record for a new job and follows it to success: one create, then one status patch per state seen, nothing when nothing moved', async () => {
    const s = sync();
    jobs.add('job-ok', clock);
    await s.round();
    expect(stored('job-ok')).toMatchObject({
      metadata: { labels: { 'volume-medic.io/node': 'worker-1', 'volume-medic.io/runbook': 'residual-multipath-cleanup' } },
      spec: { jobId: 'job-ok', queue: QUEUE, runbook: 'residual-multipath-cleanup', node: 'worker-1', target: 'node=worker-1, wwid=3600a0b8' },
      status: { phase: 'Waiting', jobState: 'waiting', attempts: 0, consoleURL: 'https://vm.example.com/ui/jobs/job-ok' },
    });
    clock += 10_000;
    jobs.move('job-ok', 'active', 'active', { processedOn: clock, attemptsStarted: 1 });
    await s.round();
    expect(stored('job-ok')!['status']).toMatchObject({ phase: 'Running', startedAt: new Date(clock).toISOString() });
    clock += 10_000;
    jobs.move('job-ok', 'completed', 'completed', {
      finishedOn: clock,
      attemptsMade: 1,
      returnvalue: { outcome: 'succeeded', mode: 'enforce', summary: 'mpatha flushed', steps: [] },
    });
    await s.round();
    expect(stored('job-ok')!['status']).toEqual({
      phase: 'Succeeded',
      jobState: 'completed',
      mode: 'enforce',
      outcome: 'succeeded',
      summary: 'mpatha flushed',
      attempts: 1,
      startedAt: new Date(clock - 10_000).toISOString(),
      finishedAt: new Date(clock).toISOString(),
      consoleURL: 'https://vm.example.com/ui/jobs/job-ok',
    });
    for (let i = 0; i < 3; i++) {
      clock += 10_000;
      await s.round();
    }
    // Cost of a job seen waiting, running and done: 1 create + 3 status merge patches (and 1 delete at the end).
    expect(writes().map((r) => `${r.method} ${r.path.replace(/.*volumeremediations/, '')} ${r.contentType ?? ''}`)).toEqual([
      'POST  application/json',
      `PATCH /${recordName(QUEUE, 'job-ok')}/status application/merge-patch+json`,
      `PATCH /${recordName(QUEUE, 'job-ok')}/status application/merge-patch+json`,
      `PATCH /${recordName(QUEUE, 'job-ok')}/status application/merge-patch+json`,
    ]);
    // One LIST when it started; none after (the next resync is 10 minutes away).
    expect(api.requestsTo('GET', `/apis/${RECORD_GROUP}/`)).toHaveLength(1);
  });

  it('a refused job reads Refused with its reasons; a parked job Parked with why, cleared once it runs', async () => {
    const s = sync();
    jobs.add('job-refused', clock);
    jobs.add('job-parked', clock + 1);
    jobs.move('job-refused', 'completed', 'completed', {
      finishedOn: clock,
      attemptsMade: 1,
      returnvalue: { outcome: 'refused', mode: 'enforce', summary: 'refused: a process holds mpatha (pid 4242, postgres)', refusals: ['holder'] },
    });
    jobs.move('job-parked', 'delayed', 'parked', {
      progress: { parked: { reason: 'approval', why: 'release-queued-io is high-risk: an operator approves it', since: new Date(clock).toISOString() } },
    });
    await s.round();
    expect(stored('job-refused')!['status']).toMatchObject({
      phase: 'Refused',
      outcome: 'refused',
      summary: 'refused: a process holds mpatha (pid 4242, postgres)',
    });
    expect(stored('job-parked')!['status']).toMatchObject({
      phase: 'Parked',
      jobState: 'parked',
      reason: 'approval',
      why: 'release-queued-io is high-risk: an operator approves it',
    });
    clock += 10_000;
    jobs.move('job-parked', 'active', 'active', { progress: {}, processedOn: clock });
    await s.round();
    const status = stored('job-parked')!['status'];
    expect(status).toMatchObject({ phase: 'Running', jobState: 'active' });
    expect(status['reason']).toBeUndefined();
    expect(status['why']).toBeUndefined();
  });

  it('deletes a record RECORD_RETENTION_HOURS after its job finished, also when Redis forgot the job long before (the dedup window)', async () => {
    const s = sync();
    jobs.add('job-old', clock);
    jobs.move('job-old', 'failed', 'failed', { finishedOn: clock, attemptsMade: 4, failedReason: 'map in use' });
    const finished = clock;
    await s.round();
    expect(stored('job-old')!['status']).toMatchObject({ phase: 'Failed', summary: 'map in use', finishedAt: new Date(finished).toISOString() });
    // Redis keeps a finished job for its queue's window (15 minutes by default): gone, the record stays.
    clock += 20 * 60_000;
    jobs.held.delete('job-old');
    await s.round();
    expect(stored('job-old')).toBeDefined();
    clock = finished + RETENTION - 1;
    await s.round();
    expect(stored('job-old')).toBeDefined();
    clock = finished + RETENTION;
    const counts = await s.round();
    expect(counts.deleted).toBe(1);
    expect(stored('job-old')).toBeUndefined();
    expect(api.requestsTo('DELETE', `/apis/${RECORD_GROUP}/`).map((r) => r.path)).toEqual([
      `/apis/${RECORD_GROUP}/${RECORD_VERSION}/namespaces/${NS}/${RECORD_PLURAL}/${recordName(QUEUE, 'job-old')}`,
    ]);
  });

  it('a job that left the store before it finished: its record says Unknown (job-gone) and is kept as long as a finished one', async () => {
    const s = sync();
    jobs.add('job-lost', clock);
    await s.round();
    jobs.held.delete('job-lost');
    clock += 10_000;
    await s.round();
    expect(stored('job-lost')!['status']).toMatchObject({ phase: 'Unknown', jobState: 'gone', reason: 'job-gone', finishedAt: new Date(clock).toISOString() });
    clock += RETENTION;
    await s.round();
    expect(stored('job-lost')).toBeUndefined();
  });

  it('a new leader lists the records once and writes nothing that is already right; a record deleted by hand comes back at the next list', async () => {
    jobs.add('job-a', clock);
    jobs.move('job-a', 'completed', 'completed', { finishedOn: clock, returnvalue: { outcome: 'planned', mode: 'dry-run', summary: 'would flush mpatha' } });
    jobs.add('job-b', clock);
    await sync().round();
    expect(stored('job-a')!['status']).toMatchObject({ phase: 'Planned', mode: 'dry-run' });
    const before = writes().length;
    const next = sync();
    clock += 10_000;
    await next.round();
    expect(writes().length).toBe(before);
    api.remove(`${RECORD_GROUP}/${RECORD_VERSION}`, 'VolumeRemediation', recordName(QUEUE, 'job-b'), NS);
    next.reset();
    await next.round();
    expect(stored('job-b')!['status']).toMatchObject({ phase: 'Waiting' });
  });

  it('the fake holds records as kube-apiserver does: the spec does not change, status only through /status', async () => {
    jobs.add('job-s', clock);
    await sync().round();
    const name = recordName(QUEUE, 'job-s');
    const path = `${api.url}/apis/${RECORD_GROUP}/${RECORD_VERSION}/namespaces/${NS}/${RECORD_PLURAL}/${name}`;
    const patch = (suffix: string, body: unknown) =>
      fetch(`${path}${suffix}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify(body) });
    // A status written to the object itself is ignored; a spec written to /status is ignored.
    expect((await patch('', { status: { phase: 'Failed' } })).status).toBe(200);
    expect((await patch('/status', { spec: { node: 'elsewhere' } })).status).toBe(200);
    expect(stored('job-s')).toMatchObject({ spec: { node: 'worker-1' }, status: { phase: 'Waiting' } });
    // The spec is the job's identity: a change is refused (the CRD's CEL rule), as is a phase the schema does not know.
    expect((await patch('', { spec: { node: 'elsewhere' } })).status).toBe(422);
    expect((await patch('/status', { status: { phase: 'Exploded' } })).status).toBe(422);
    refused.length = 0;
    // The receiver's own requests (not these) are all it may do: and each one it may do, it did.
    const calls = new Set(api.requests.filter((r) => r.path.startsWith(`/apis/${RECORD_GROUP}/`) && r.method !== 'PATCH').map((r) => apiCallOf(r)?.call));
    expect([...calls].sort()).toEqual(['volume-medic.io/volumeremediations create', 'volume-medic.io/volumeremediations list']);
    const listed = DIRECT_CALLS.receiver.map((d) => d.call).filter((c) => c.startsWith('volume-medic.io/volumeremediations'));
    expect(listed.sort()).toEqual([
      'volume-medic.io/volumeremediations create',
      'volume-medic.io/volumeremediations delete',
      'volume-medic.io/volumeremediations list',
      'volume-medic.io/volumeremediations/status patch',
    ]);
    // The test's own patch of the object itself is outside the receiver's RBAC; drop it from the afterEach check.
    api.requests.splice(0, api.requests.length, ...api.requests.filter((r) => !(r.method === 'PATCH' && !r.path.endsWith('/status'))));
  });

  it("a storm beyond a round's room, and a write the API server failed, are written in the next rounds after the index's window moved on", async () => {
    const s = new RecordSync({
      records: new CustomRecords(api.kubeConfig(), { group: RECORD_GROUP, version: RECORD_VERSION, plural: RECORD_PLURAL, namespace: NS }),
      jobs,
      namespace: NS,
      retentionMs: RETENTION,
      writesMax: 2,
      now: () => clock,
      log: silent,
    });
    for (let i = 0; i < 5; i++) jobs.add(`storm-${i}`, clock);
    api.failNext(/^POST .*volumeremediations/, 500);
    await s.round();
    // Stored long before the next rounds' window: only what the sync carried brings them.
    for (const h of jobs.held.values()) h.storedAt -= HOUR;
    for (let r = 0; r < 3; r++) {
      clock += 10_000;
      await s.round();
    }
    expect([0, 1, 2, 3, 4].filter((i) => stored(`storm-${i}`)?.['status']?.phase === 'Waiting')).toEqual([0, 1, 2, 3, 4]);
  });

  it('without the CRD installed (404) the round fails, and says so; nothing else is touched', async () => {
    api.absentGroups.add(RECORD_GROUP);
    jobs.add('job-x', clock);
    await expect(sync().round()).rejects.toThrow();
    expect(writes()).toEqual([]);
  });
});
