import { describe, expect, it } from 'vitest';
import type { StoredJob } from '../../../../src/core/jobs/job-store.ts';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { recordName } from '../../../../src/control/console/record-name.ts';
import { jobPage, type JobView } from '../../../../src/control/http/routes/ui-job-page.ts';
import { toIncident } from '../../../../src/control/console/incident.ts';
import { LIMITS, PHASES, recordOf, targetLine, type ScanState } from '../../../../src/control/records/volume-remediation.ts';
import { structuralProblems, schemaErrors } from '../../../testkit/structural-schema.ts';
import { volumeRemediationCrd, volumeRemediationSchema } from '../../../testkit/volume-remediation-crd.ts';

// A job as its VolumeRemediation record: a DNS-safe name of its own, the phase the console's
// state and the result's outcome give, and an object the chart's CRD schema takes whatever the
// job holds (long summaries, odd node names, a job that does not match the catalogue).

const NODE = 'worker-7';
const job = (over: Partial<StoredJob> = {}): StoredJob => ({
  id: 'am-3f2a9c_1733.x',
  name: 'residual-multipath-cleanup',
  data: {
    runbook: 'residual-multipath-cleanup',
    version: 1,
    key: 'am-3f2a9c_1733.x',
    target: { node: NODE, wwid: '3600a0b8' },
    evidence: [{ source: 'alertmanager', summary: 'KubeNodeNotReady', raw: null }],
  },
  timestamp: Date.parse('2026-12-07T03:00:00Z'),
  attemptsMade: 0,
  attemptsStarted: 0,
  attempts: 4,
  progress: {},
  ...over,
});
const ctx = { namespace: 'volume-medic', consoleUrl: 'https://vm.example.com' };
const record = (j: StoredJob, state: string, scanned: ScanState = state as ScanState) => recordOf(j, nodeQueueName(NODE), state, scanned, ctx);
const done = (outcome: string, mode = 'enforce') =>
  job({ returnvalue: { outcome, mode, summary: `${outcome}: mpatha`, steps: [] }, finishedOn: Date.parse('2026-12-07T03:01:00Z'), attemptsMade: 1 });

describe('record names', () => {
  it('are DNS subdomains, readable, and differ for ids that differ only in case, dots or underscores, or by queue', () => {
    const names = [
      recordName(nodeQueueName('a'), 'Am_1.X'),
      recordName(nodeQueueName('a'), 'am-1-x'),
      recordName(nodeQueueName('a'), 'am_1_x'),
      recordName(nodeQueueName('b'), 'am_1_x'),
      recordName(CLUSTER_QUEUE, `A${'b'.repeat(199)}`),
    ];
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) {
      expect(n).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      expect(n.length).toBeLessThanOrEqual(253);
    }
    expect(names[0]).toMatch(/^vmr-am-1-x-[0-9a-f]{10}$/);
    expect(recordName(nodeQueueName('a'), 'Am_1.X')).toBe(names[0]);
  });
});

describe('the phase of a record', () => {
  it.each([
    ['waiting', job(), 'Waiting'],
    ['delayed', job({ attemptsMade: 1 }), 'Waiting'],
    ['active', job(), 'Running'],
    ['delayed', job({ progress: { parked: { reason: 'approval', why: 'high-risk step', since: '2026-12-07T03:00:05Z' } } }), 'Parked'],
    ['completed', done('succeeded'), 'Succeeded'],
    ['completed', done('nothing-to-do'), 'Succeeded'],
    ['completed', done('refused'), 'Refused'],
    ['completed', done('planned', 'dry-run'), 'Planned'],
    ['completed', done('waiting', 'dry-run'), 'Planned'],
    ['failed', job({ failedReason: 'map in use', finishedOn: Date.now() }), 'Failed'],
    ['failed', done('refused'), 'Refused'],
  ] as const)('a %s job reads as its console state: %s', (state, j, phase) => {
    expect(record(j, state, state === 'delayed' && (j.progress as { parked?: unknown }).parked ? 'parked' : state).status.phase).toBe(phase);
  });

  it("the CRD's phases are exactly the code's", () => {
    const phase = volumeRemediationSchema().properties!['status']!.properties!['phase']!;
    expect(phase.enum).toEqual([...PHASES]);
  });
});

describe('a record', () => {
  it("carries the job's identity in its spec, the console's words in its status, labels to select by, and a link back", () => {
    const r = record(job({ progress: { parked: { reason: 'approval', why: 'high-risk step', since: '2026-12-07T03:00:05Z' } } }), 'delayed', 'parked');
    expect(r.metadata).toEqual({
      name: recordName(nodeQueueName(NODE), 'am-3f2a9c_1733.x'),
      namespace: 'volume-medic',
      labels: { 'app.kubernetes.io/managed-by': 'volume-medic', 'volume-medic.io/runbook': 'residual-multipath-cleanup', 'volume-medic.io/node': NODE },
    });
    expect(r.spec).toEqual({
      jobId: 'am-3f2a9c_1733.x',
      queue: nodeQueueName(NODE),
      runbook: 'residual-multipath-cleanup',
      node: NODE,
      target: `node=${NODE}, wwid=3600a0b8`,
      createdAt: '2026-12-07T03:00:00.000Z',
    });
    expect(r.status).toEqual({
      phase: 'Parked',
      jobState: 'parked',
      reason: 'approval',
      why: 'high-risk step',
      attempts: 0,
      consoleURL: 'https://vm.example.com/ui/jobs/am-3f2a9c_1733.x',
    });
  });

  it('is valid against the chart CRD, whatever the job holds', () => {
    const schema = volumeRemediationSchema();
    const odd = job({
      id: 'x',
      name: 'no-such-runbook-with-a-name-longer-than-a-label-may-be-'.repeat(3),
      data: { target: { node: `${'n'.repeat(70)}.example.com`, nested: { a: 1 } } },
      returnvalue: { outcome: 'succeeded', mode: 'enforce', summary: 's'.repeat(5000) },
      progress: { parked: { reason: 'r'.repeat(300), why: 'w'.repeat(3000) } },
      failedReason: 'f'.repeat(4000),
      processedOn: Date.now(),
      finishedOn: Date.now(),
      attemptsMade: 3,
    });
    for (const [state, scanned] of [
      ['completed', 'completed'],
      ['failed', 'failed'],
      ['delayed', 'parked'],
      ['active', 'active'],
      ['waiting', 'waiting'],
    ] as const) {
      for (const j of [odd, job(), done('succeeded')]) {
        const r = record(j, state, scanned);
        expect(schemaErrors(schema, r), `${j.id} ${state}`).toEqual([]);
        expect(r.status.summary?.length ?? 0).toBeLessThanOrEqual(LIMITS.summary);
      }
    }
    const r = recordOf(odd, CLUSTER_QUEUE, 'completed', 'completed', { namespace: 'ns' });
    expect(r.metadata.labels['volume-medic.io/node']).toBeUndefined();
    expect(r.status.consoleURL).toBeUndefined();
  });

  it('names the target in one line', () => {
    expect(targetLine({ node: 'a', pool: 'rbd', image: 'csi-vol-1', watchers: ['x'] })).toBe('node=a, pool=rbd, image=csi-vol-1');
    expect(targetLine(undefined)).toBeUndefined();
  });
});

describe("the chart's CRD", () => {
  it('is structural, namespaced, with a status subresource, the printer columns, kept by Helm on uninstall', () => {
    const crd = volumeRemediationCrd();
    expect(crd['metadata'].annotations['helm.sh/resource-policy']).toBe('keep');
    expect(crd['spec'].scope).toBe('Namespaced');
    expect(crd['spec'].names).toMatchObject({ kind: 'VolumeRemediation', plural: 'volumeremediations', shortNames: ['vmr'] });
    const [v] = crd['spec'].versions;
    expect(v.subresources).toEqual({ status: {} });
    expect(v.additionalPrinterColumns.filter((c: { priority?: number }) => !c.priority).map((c: { name: string }) => c.name.toUpperCase())).toEqual([
      'NODE',
      'RUNBOOK',
      'PHASE',
      'MODE',
      'AGE',
    ]);
    expect(structuralProblems(volumeRemediationSchema(crd))).toEqual([]);
  });
});

describe("a job's page", () => {
  it('names its record with the kubectl command that reads it', () => {
    const j = job();
    const view: JobView = {
      incident: toIncident(j, nodeQueueName(NODE), 'waiting'),
      log: [],
      audit: [],
      events: { unknown: 'none' },
      record: { name: recordName(nodeQueueName(NODE), j.id), namespace: 'volume-medic' },
      self: '/ui/jobs/x',
    };
    const html = jobPage(view, { csrf: 'c', username: 'u' });
    expect(html).toContain(`<code>kubectl get volumeremediation ${recordName(nodeQueueName(NODE), j.id)} -n volume-medic -o yaml</code>`);
    const { record: _r, ...without } = view;
    expect(jobPage(without, { csrf: 'c', username: 'u' })).not.toContain('kubectl get volumeremediation');
  });
});
