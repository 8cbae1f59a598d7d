import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { JobEventRecorder } from '../../../../src/adapters/kube/job-events.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { ParkedError } from '../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { uncoveredByRbac } from '../../../support/kube-objects.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { waitFor } from '../../../support/wait.ts';

// Issue 3, "Events out", through the real node agent: each job's start and result reach the API
// server as Events on the Node the job concerns, with the job id in the note.

const EVENTS = '/apis/events.k8s.io/v1/namespaces/default/events';
const silent = createLogger('test', 'silent');

describe('the node agent records job Events on the Node', () => {
  const prefix = uniquePrefix('jobevents');
  let api: FakeKubeApi;
  let receiver: Receiver;

  beforeAll(async () => {
    api = await startFakeKubeApi();
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, operatorAuth: 'insecure' }));
  });
  afterAll(async () => {
    await receiver?.close();
    await api?.close();
    await dropPrefix(prefix);
  });

  const runJob = async (node: string, handler: (job: ResidualMultipathJob, ctx: RunbookContext) => Promise<RunbookResult>) => {
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved')]));
    const id: string = r.json.accepted[0].id;
    const agent = createNodeAgent({
      config: testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, nodeName: node }),
      registry: { 'residual-multipath-cleanup': handler },
      log: silent,
      // The agent's own client (workers/node-agent/node-kube.ts uses src/adapters/kube/rest in a pod).
      events: new JobEventRecorder({
        events: restApis(new KubeRest({ server: api.url, token: () => 'fake-token' })).events,
        instance: node,
      }),
    });
    try {
      await waitFor('the job to finish', async () => {
        const j = await getJson(`${receiver.url}/v1/jobs/${id}`);
        return j.state === 'completed' || j.state === 'failed' ? j : undefined;
      });
      // Events are sent without holding up the job; wait for them to arrive.
      return await waitFor("the job's Events", async () => {
        const mine = api
          .requestsTo('POST', EVENTS)
          .map((q) => q.body as { note: string; reason: string; regarding: { kind: string; name: string } })
          .filter((b) => b.note.includes(id));
        return mine.length >= 2 ? { id, events: mine } : undefined;
      });
    } finally {
      await agent.close();
    }
  };

  it('posts a start and a success Event, both on the Node and naming the job', async () => {
    const { id, events } = await runJob('events-ok', async () => ({
      runbook: 'residual-multipath-cleanup',
      mode: 'dry-run',
      outcome: 'nothing-to-do',
      summary: 'no residual maps',
      facts: {},
      plan: {},
      refusals: [],
      steps: [],
      commands: [],
      ranOn: 'events-ok',
    }));
    expect(events.map((e) => e.reason).sort()).toEqual(['RemediationStarted', 'RemediationSucceeded']);
    for (const e of events) expect(e.regarding).toMatchObject({ kind: 'Node', name: 'events-ok' });
    expect(events.find((e) => e.reason === 'RemediationSucceeded')!.note).toContain(`job ${id}`);
  });

  it('names the evidence of each destructive step in the success Event, and writes the step to the audit trail', async () => {
    const { id, events } = await runJob('events-evidence', async (job, ctx) => {
      await ctx.audit?.(
        'destructive-step',
        `job/${ctx.jobId}/flush-map:36001405`,
        'multipath -f mpathb; evidence: every path of mpathb is dead (multipath -ll)',
      );
      return {
        runbook: 'residual-multipath-cleanup',
        mode: 'enforce',
        outcome: 'succeeded',
        summary: 'remove residual map(s) mpathb',
        facts: {},
        plan: {},
        refusals: [],
        commands: [],
        ranOn: job.target.node,
        steps: [
          {
            id: 'flush-map:36001405',
            description: 'multipath -f mpathb',
            destructive: true,
            status: 'done',
            startedAt: new Date().toISOString(),
            durationMs: 1,
            commands: [],
            evidence: [{ claim: 'every path of mpathb is dead', source: 'multipath -ll', observedAt: new Date().toISOString(), status: 'holds' }],
          },
        ],
      };
    });
    expect(events.find((e) => e.reason === 'RemediationSucceeded')!.note).toMatch(/evidence: flush-map:36001405: every path of mpathb is dead/);
    const { audit } = await getJson(`${receiver.url}/v1/controls/audit`);
    expect(audit).toContainEqual(
      expect.objectContaining({
        action: 'destructive-step',
        by: 'events-evidence',
        target: `job/${id}/flush-map:36001405`,
        why: expect.stringMatching(/evidence: every path of mpathb is dead/),
      }),
    );
  });

  it('posts a refusal as a Warning Event with the reason', async () => {
    const { events } = await runJob('events-refused', async () => {
      throw new RefusedError(['map dm-3 still has a live path']);
    });
    const refused = events.find((e) => e.reason === 'RemediationRefused') as { note: string; type?: string } | undefined;
    expect(refused?.note).toContain('map dm-3 still has a live path');
  });

  it('posts a dry-run as RemediationPlanned naming the steps enforce would take, not as a success', async () => {
    const { events } = await runJob('events-planned', async (job) => ({
      runbook: 'residual-multipath-cleanup',
      mode: 'dry-run',
      outcome: 'planned',
      summary: 'remove residual map(s) mpathb',
      facts: {},
      plan: {},
      refusals: [],
      commands: [],
      ranOn: job.target.node,
      steps: [
        {
          id: 'flush-map:36001405',
          description: 'multipath -f mpathb',
          destructive: true,
          status: 'would-run',
          startedAt: new Date().toISOString(),
          durationMs: 0,
          commands: [],
        },
      ],
    }));
    expect(events.map((e) => e.reason).sort()).toEqual(['RemediationPlanned', 'RemediationStarted']);
    expect(events.find((e) => e.reason === 'RemediationPlanned')!.note).toMatch(/dry-run: enforce would take 1 step\(s\): flush-map:36001405/);
  });

  it('posts a parked job once per reason it waits for, not on each recheck; then its start and success', async () => {
    let looks = 0;
    const parking = { reason: 'evidence' as const, why: 'the paths of mpathb have been dead for less than 30 s' };
    const done: RunbookResult = {
      runbook: 'residual-multipath-cleanup',
      mode: 'enforce',
      outcome: 'succeeded',
      summary: 'removed mpathb',
      facts: {},
      plan: {},
      refusals: [],
      commands: [],
      ranOn: 'events-parked',
      steps: [],
    };
    const { events } = await runJob('events-parked', async () => {
      looks++;
      if (looks <= 2)
        throw new ParkedError(
          { ...parking, until: new Date(Date.now() + 300) },
          { ...done, outcome: 'waiting', summary: 'waiting' },
          { summary: 'waiting', steps: [] },
        );
      return done;
    });
    expect(looks).toBe(3);
    const parked = api.list('events.k8s.io/v1', 'Event').filter((e) => e['reason'] === 'RemediationParked' && e['regarding'].name === 'events-parked');
    expect(parked).toHaveLength(1);
    expect(parked[0]!['series']).toBeUndefined();
    expect(parked[0]!['note']).toContain(`parked (evidence): ${parking.why}`);
    expect(events.map((e) => e.reason)).toContain('RemediationSucceeded');
  });

  // Last on purpose: sees every request the agent's recorder made above.
  it("writes Events only where the node agent's Role allows (namespace default)", () => {
    expect(api.requests.length).toBeGreaterThan(0);
    expect(uncoveredByRbac(api.requests, 'node-agent')).toEqual([]);
  });
});
