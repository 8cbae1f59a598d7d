import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, toyRunbook, toyStep, type Toy } from '../../../support/controls-harness.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { setTimeout as sleep } from 'node:timers/promises';

// Each operator control against a real Redis, a real receiver and a real node agent running a
// toy runbook whose steps write files on a fake host. Operators are Kubernetes users of the fake
// API server (TokenReview/SubjectAccessReview): `api(path, body, 'alice')` acts as alice.

const silent = createLogger('test', 'silent');
const TOKEN = 'controls-test-token-0123456789';

const step = toyStep;

describe('operator controls with a real Redis, receiver and node agent', () => {
  const prefix = uniquePrefix('controls');
  let receiver: Receiver;
  let redis: Redis;
  let ops: Operators;
  const agents: RunbookWorker[] = [];
  const base = (over: Partial<Config> = {}): Config => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], ...fastControls, ...over });

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    ops = await startOperators();
    receiver = await startReceiver(base({ breakerNodeDestructivePerHour: 3, breakerStormNodes: 0, approvalTtlSeconds: 3600 }), {
      operatorKubeConfig: ops.api.kubeConfig(),
    });
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  const api = (path: string, body: unknown = {}, as = 'oncall') => post(`${receiver.url}${path}`, body, ops.token(as));
  const get = (path: string) => getJson(`${receiver.url}${path}`, ops.token('reader'));
  const agent = (node: string, toy: Toy, over: Partial<Config> = {}) => {
    const a = createNodeAgent({ config: base({ nodeName: node, ...over }), registry: toy.registry, log: silent });
    agents.push(a);
    return a;
  };
  let n = 0;
  const newJob = async (node: string, to: Receiver = receiver): Promise<string> => {
    n += 1;
    const r = await post(
      `${to.url}/v1/alertmanager`,
      alertmanagerBody([nodeNotReadyAlert(node, 'resolved', `fp${n}x${node.replace(/[^a-z0-9]/g, '')}`)]),
      TOKEN,
    );
    expect(r.status).toBe(202);
    return r.json.accepted[0].id;
  };
  const job = (id: string) => get(`/v1/jobs/${id}`);
  const until = (id: string, pred: (j: any) => boolean, what: string, ms?: number) =>
    waitFor(
      what,
      async () => {
        const j = await job(id);
        return pred(j) ? j : undefined;
      },
      ms,
    );

  it('a mode change through the API takes effect on the next job, and the result says why', async () => {
    const toy = toyRunbook(() => ({ kind: 'steps', summary: 'one file', steps: [step('m1', { destructive: false })] }));
    const a = agent('node-mode', toy);
    const first = await until(await newJob('node-mode'), (j) => j.state === 'completed', 'first job');
    expect(first.result).toMatchObject({ mode: 'dry-run', outcome: 'planned', modeWhy: expect.stringMatching(/by configuration/) });
    expect(await toy.ran('/w/m1')).toBe(false);

    const set = await api('/v1/modes', { runbook: 'residual-multipath-cleanup', mode: 'enforce', why: 'INC-1 verified in staging' }, 'alice');
    expect(set.status).toBe(200);
    const second = await until(await newJob('node-mode'), (j) => j.state === 'completed', 'second job');
    expect(second.result).toMatchObject({
      mode: 'enforce',
      outcome: 'succeeded',
      modeWhy: expect.stringMatching(/enforce set by alice .*INC-1/),
    });
    expect(await toy.ran('/w/m1')).toBe(true);

    // The node holds its agent to dry-run, whatever the runbook says.
    await api('/v1/modes', { node: 'node-mode', mode: 'dry-run', why: 'disk vendor on site' }, 'bob');
    const third = await until(await newJob('node-mode'), (j) => j.state === 'completed', 'third job');
    expect(third.result).toMatchObject({ mode: 'dry-run', modeWhy: expect.stringMatching(/node node-mode dry-run set by bob/) });
    expect(third.log.join('\n')).toMatch(/in dry-run mode \(node node-mode dry-run set by bob/);
    await api('/v1/modes', { node: 'node-mode', mode: 'default' }, 'bob');
    await api('/v1/modes', { runbook: 'residual-multipath-cleanup', mode: 'default' }, 'alice');
    const audit = await get('/v1/controls/audit');
    expect(audit.audit.map((e: any) => `${e.action} ${e.target} ${e.by}`)).toContain('mode-enforce runbook/residual-multipath-cleanup alice');
    await a.close();
  });

  describe('approval of high-risk steps', () => {
    const enforce: Partial<Config> = { runbookModes: { 'residual-multipath-cleanup': 'enforce' } };
    const plan = {
      kind: 'steps' as const,
      summary: 'release then flush',
      steps: [step('safe-first', { destructive: false }), step('release', { risk: 'high' }), step('flush')],
    };

    it('parks the job with its plan visible, and runs the step after approve', async () => {
      const toy = toyRunbook(() => plan);
      agent('node-approve', toy, enforce);
      const id = await newJob('node-approve');
      const parked = await until(id, (j) => j.progress?.parked?.reason === 'approval', 'job parked for approval');
      expect(parked.state).toMatch(/delayed|waiting|active/);
      expect(parked.progress.parked.plan.steps.map((s: any) => s.id)).toEqual(['safe-first', 'release', 'flush']);
      expect(parked.progress.result).toMatchObject({ outcome: 'waiting', mode: 'enforce' });
      expect(await toy.ran('/w/safe-first')).toBe(true);
      expect(await toy.ran('/w/release')).toBe(false);
      const approval = await get(`/v1/jobs/${id}/approval`);
      expect(approval).toMatchObject({ state: 'pending', steps: [{ id: 'release', why: 'high-risk step' }] });
      expect((await get('/v1/approvals')).approvals.map((a: any) => a.jobId)).toContain(id);
      // Still waiting a while later: nothing runs without a decision.
      await sleep(800);
      expect(await toy.ran('/w/release')).toBe(false);

      const ok = await api(`/v1/jobs/${id}/approve`, { why: 'checked multipath -ll by hand' }, 'carol');
      expect(ok.status).toBe(200);
      expect(ok.json).toMatchObject({ state: 'approved', decidedBy: 'carol' });
      const done = await until(id, (j) => j.state === 'completed', 'job completed after approval');
      expect(done.result.outcome).toBe('succeeded');
      expect(done.result.steps.map((s: any) => `${s.id}:${s.status}`)).toEqual(['safe-first:skipped-already-done', 'release:done', 'flush:done']);
      // Parking used no attempt: the one attempt that finished is the only one counted.
      expect(done.attemptsMade).toBe(1);
      expect(await toy.ran('/w/flush')).toBe(true);
      // A decision is final.
      expect((await api(`/v1/jobs/${id}/approve`, {}, 'dave')).status).toBe(409);
    });

    it('never runs the step after reject: the job fails as refused, with who and why', async () => {
      const toy = toyRunbook(() => plan);
      agent('node-reject', toy, enforce);
      const id = await newJob('node-reject');
      await until(id, (j) => j.progress?.parked?.reason === 'approval', 'job parked for approval');
      expect((await api(`/v1/jobs/${id}/reject`, {}, 'erin')).status).toBe(400); // why is required
      const r = await api(`/v1/jobs/${id}/reject`, { why: 'map is a live LUN per storage team' }, 'erin');
      expect(r.json).toMatchObject({ state: 'rejected', decidedBy: 'erin' });
      const failed = await until(id, (j) => j.state === 'failed', 'job failed after reject');
      expect(failed.failedReason).toMatch(/approval rejected by erin .*live LUN/);
      expect(failed.attemptsMade).toBe(1);
      expect(await toy.ran('/w/release')).toBe(false);
      expect(await toy.ran('/w/flush')).toBe(false);
    });

    it('never runs the step after the request expired undecided, and a late approve is refused', async () => {
      const toy = toyRunbook(() => plan);
      agent('node-expire', toy, { ...enforce, approvalTtlSeconds: 1 });
      const id = await newJob('node-expire');
      await until(id, (j) => j.progress?.parked?.reason === 'approval', 'job parked for approval');
      const failed = await until(id, (j) => j.state === 'failed', 'job failed after expiry');
      expect(failed.failedReason).toMatch(/approval request expired/);
      expect((await api(`/v1/jobs/${id}/approve`, {}, 'late')).status).toBe(409);
      expect(await toy.ran('/w/release')).toBe(false);
    });
  });

  it('pause holds jobs (cluster-wide and per node), /readyz and /metrics say so, and resume releases them', async () => {
    const toy = toyRunbook((node) => ({ kind: 'steps', summary: 'one file', steps: [step(`p-${node}`, { destructive: false })] }));
    agent('node-p1', toy);
    agent('node-p2', toy);
    expect((await api('/v1/pause', { why: 'SAN firmware upgrade' }, 'frank')).json).toMatchObject({ paused: 'cluster', changed: true });
    expect((await api('/v1/pause', { node: 'node-p2', why: 'node under investigation' }, 'frank')).status).toBe(200);
    const ready = await getJson(`${receiver.url}/readyz`);
    expect(ready).toMatchObject({ status: 'ready, paused', paused: true, controls: { paused: { cluster: true, nodes: ['node-p2'] } } });

    const [j1, j2] = [await newJob('node-p1'), await newJob('node-p2')];
    const held = await until(j1, (j) => j.progress?.parked?.reason === 'paused', 'job held by the pause');
    expect(held.progress.parked.why).toMatch(/cluster-wide pause by frank .*SAN firmware/);
    await until(j2, (j) => j.progress?.parked?.reason === 'paused', 'second job held');
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(metrics).toMatch(/volume_medic_paused\{scope="cluster"\} 1/);
    expect(metrics).toMatch(/volume_medic_paused\{scope="node\/node-p2"\} 1/);
    expect(metrics).toMatch(/volume_medic_jobs_parked\{reason="paused"\} 2/);
    await sleep(700);
    expect((await job(j1)).state).not.toBe('completed');

    // Resuming the cluster releases node-p1; node-p2 stays held by its own pause.
    const resumed = await api('/v1/resume', {}, 'frank');
    expect(resumed.json).toMatchObject({ resumed: 'cluster', changed: true });
    const done = await until(j1, (j) => j.state === 'completed', 'job released by resume', 5_000);
    expect(done.result.outcome).toBe('planned');
    await sleep(700);
    expect((await job(j2)).progress.parked.why).toMatch(/node node-p2 paused by frank/);
    expect((await job(j2)).state).not.toBe('completed');
    await api('/v1/resume', { node: 'node-p2' }, 'frank');
    await until(j2, (j) => j.state === 'completed', 'node job released', 5_000);
    expect(await getJson(`${receiver.url}/readyz`)).toMatchObject({ status: 'ready', paused: false });
  });

  it('pause also stops a running job before its next step; nothing is lost', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const toy = toyRunbook(() => ({
      kind: 'steps',
      summary: 'slow',
      steps: [step('slow-1', { destructive: false }), step('slow-2', { destructive: false })],
    }));
    const inner = toy.registry['residual-multipath-cleanup']!;
    // The first step's check waits until the test has paused the node.
    toy.registry['residual-multipath-cleanup'] = async (j, ctx) => {
      const originalBefore = ctx.gate?.beforeStep.bind(ctx.gate);
      const wrapped =
        ctx.gate && originalBefore
          ? {
              beforeStep: async (s: any, p: any) => {
                if (s.id === 'slow-2') await gate;
                return originalBefore(s, p);
              },
            }
          : undefined;
      return inner(j, { ...ctx, ...(wrapped ? { gate: wrapped } : {}) });
    };
    agent('node-mid', toy, { runbookModes: { 'residual-multipath-cleanup': 'enforce' } });
    const id = await newJob('node-mid');
    await waitFor('first step', async () => ((await toy.ran('/w/slow-1')) ? true : undefined));
    await api('/v1/pause', { node: 'node-mid', why: 'stop now' }, 'gina');
    release();
    const held = await until(id, (j) => j.progress?.parked?.reason === 'paused', 'running job parked');
    expect(held.progress.result.steps.map((s: any) => s.id)).toEqual(['slow-1']);
    await api('/v1/resume', { node: 'node-mid' }, 'gina');
    await until(id, (j) => j.state === 'completed', 'job finished after resume', 5_000);
  });

  it('a switch to dry-run during a job stops it before its next destructive step, saying why; its earlier steps stand', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const toy = toyRunbook(() => ({
      kind: 'steps',
      summary: 'look, then delete',
      steps: [step('dr-1', { destructive: false }), step('dr-2')],
    }));
    const inner = toy.registry['residual-multipath-cleanup']!;
    // The destructive step's gate waits until the test has switched the mode.
    toy.registry['residual-multipath-cleanup'] = async (j, ctx) => {
      const originalBefore = ctx.gate?.beforeStep.bind(ctx.gate);
      const wrapped =
        ctx.gate && originalBefore
          ? {
              beforeStep: async (s: any, p: any) => {
                if (s.id === 'dr-2') await gate;
                return originalBefore(s, p);
              },
            }
          : undefined;
      return inner(j, { ...ctx, ...(wrapped ? { gate: wrapped } : {}) });
    };
    agent('node-dry-mid', toy, { runbookModes: { 'residual-multipath-cleanup': 'enforce' } });
    const id = await newJob('node-dry-mid');
    await waitFor('first step', async () => ((await toy.ran('/w/dr-1')) ? true : undefined));
    expect((await api('/v1/modes', { node: 'node-dry-mid', mode: 'dry-run', why: 'INC-7: hands off this node' }, 'ivan')).status).toBe(200);
    release();
    const failed = await until(id, (j) => j.state === 'failed', 'job stopped');
    expect(failed.failedReason).toMatch(/stopped before destructive step dr-2: the mode is now dry-run \(.*ivan.*INC-7/);
    expect(failed.attemptsMade).toBe(1);
    expect(await toy.ran('/w/dr-2')).toBe(false);
  });

  it('a node breaker trips at its cap, blocks the next destructive step, says why, and stays tripped until reset', async () => {
    // Cap 3 destructive steps per node per hour (receiver and agent configured alike).
    const toy = toyRunbook(() => ({ kind: 'steps', summary: 'four deletions', steps: [step('d1'), step('d2'), step('d3'), step('d4')] }));
    agent('node-brk', toy, {
      breakerNodeDestructivePerHour: 3,
      breakerStormNodes: 0,
      runbookModes: { 'residual-multipath-cleanup': 'enforce' },
    });
    const id = await newJob('node-brk');
    const parked = await until(id, (j) => j.progress?.parked?.reason === 'breaker', 'job parked by the breaker');
    expect(parked.progress.parked.why).toMatch(/breaker node\/node-brk is tripped \(node\/node-brk ran 3 destructive steps in the last hour \(cap 3\)/);
    expect(await toy.ran('/w/d3')).toBe(true);
    expect(await toy.ran('/w/d4')).toBe(false);
    const b = await get('/v1/breakers');
    expect(b.breakers.find((x: any) => x.name === 'node/node-brk')).toMatchObject({
      cap: 3,
      count: 3,
      tripped: { why: expect.stringMatching(/cap 3/) },
    });
    expect(await (await fetch(`${receiver.url}/metrics`)).text()).toMatch(/volume_medic_breaker_tripped\{breaker="node\/node-brk"\} 1/);
    await sleep(800);
    expect(await toy.ran('/w/d4')).toBe(false);

    const reset = await api('/v1/breakers/reset', { breaker: 'node/node-brk', why: 'reviewed the four deletions' }, 'hank');
    expect(reset.json).toMatchObject({ cleared: { breaker: 'node/node-brk' } });
    const done = await until(id, (j) => j.state === 'completed', 'job finished after reset', 15_000);
    expect(done.result.outcome).toBe('succeeded');
    expect(await toy.ran('/w/d4')).toBe(true);
  });

  it('the storm breaker trips when more than M nodes start jobs within its window, and blocks destructive steps everywhere', async () => {
    const toy = toyRunbook((node) => ({ kind: 'steps', summary: 'one deletion', steps: [step(`s-${node}`)] }));
    const cfg: Partial<Config> = {
      breakerStormNodes: 2,
      breakerStormWindowSeconds: 600,
      runbookModes: { 'residual-multipath-cleanup': 'enforce' },
    };
    // The receiver counts a node where it stores its job, with its own caps: this test's jobs go
    // through a second replica with the storm breaker on (the first has it off for the other tests).
    const stormy = await startReceiver(base({ breakerStormNodes: 2, breakerStormWindowSeconds: 600 }), { operatorKubeConfig: ops.api.kubeConfig() });
    onTestFinished(() => stormy.close());
    // Earlier tests' nodes are in the window too: start from an empty one.
    await api('/v1/breakers/reset', { breaker: 'storm' }, 'test');
    for (const node of ['storm-a', 'storm-b', 'storm-c']) agent(node, toy, cfg);
    // The first two nodes' jobs finish before the third starts: were they still running when the
    // storm tripped, they would park too, and the reset below would release three nodes at once
    // and trip the storm again (as it should), leaving the third job parked (seen under load).
    const ids = [];
    for (const node of ['storm-a', 'storm-b']) {
      const id = await newJob(node, stormy);
      ids.push(id);
      await until(id, (j) => j.state === 'completed', `${node}'s job done`);
    }
    ids.push(await newJob('storm-c', stormy));
    await waitFor('storm breaker tripped', async () => {
      const b = await get('/v1/breakers');
      return b.breakers.find((x: any) => x.name === 'storm' && x.tripped) ?? undefined;
    });
    const parked = await until(ids[2] as string, (j) => j.state === 'completed' || j.progress?.parked?.reason === 'breaker', 'third node blocked');
    expect(parked.progress?.parked?.why).toMatch(/breaker storm is tripped \(3 nodes started recovery jobs within 600 s \(more than 2\), from alertmanager 3:/);
    expect(await toy.ran('/w/s-storm-c')).toBe(false);
    // The metric the alert fires on names the sender of the flood.
    expect(await (await fetch(`${receiver.url}/metrics`)).text()).toMatch(/^volume_medic_breaker_tripped\{breaker="storm",sources="alertmanager 3"\} 1$/m);
    await api('/v1/breakers/reset', { breaker: 'storm', why: 'rack power restored, one cause' }, 'ivy');
    await until(ids[2] as string, (j) => j.state === 'completed', 'job finished after storm reset', 15_000);
  });

  it('control routes need an operator and validate their input', async () => {
    expect((await post(`${receiver.url}/v1/pause`, {})).status).toBe(401);
    expect((await post(`${receiver.url}/v1/pause`, {}, TOKEN)).status).toBe(403);
    expect((await api('/v1/pause', { node: 'Not A Node!' }, 'x')).status).toBe(400);
    expect((await api('/v1/breakers/reset', { breaker: 'node/../x' }, 'x')).status).toBe(400);
    expect((await api('/v1/modes', { runbook: 'residual-multipath-cleanup', node: 'n', mode: 'enforce' }, 'x')).status).toBe(400);
    expect((await api('/v1/jobs/nope_nope/approve', {}, 'x')).status).toBe(404);
  });
});
