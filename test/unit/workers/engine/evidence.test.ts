import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Mode } from '../../../../src/core/catalogue/result.ts';
import type { StepEvidence } from '../../../../src/core/catalogue/step-evidence.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { judgeEvidence } from '../../../../workers/engine/judge-evidence.ts';
import { ParkedError } from '../../../../workers/engine/gate.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { Plan, PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';
import { toyJob } from './toy-job.ts';

// Unknown means refuse, once, in the engine: a destructive step runs only on positive, fresh,
// mature evidence; everything else is refused (or waits) with a reason that names what is missing.

const NOW = new Date('2026-12-04T03:00:00Z');
const ago = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString();
const holds = (claim: string, at = ago(1)): StepEvidence => ({ claim, source: 'test probe', observedAt: at, status: 'holds' });
const step = (evidence?: StepEvidence[], destructive = true): PlannedStep => ({
  id: 'wipe:b',
  description: 'wipe b',
  destructive,
  ...(evidence ? { evidence } : {}),
});

describe('judging a step’s evidence', () => {
  it('lets a destructive step with fresh positive evidence go', () => {
    expect(judgeEvidence(step([holds('b is ours')]), NOW)).toEqual({ kind: 'go' });
  });

  it('never asks anything of a step that changes nothing destructive', () => {
    expect(judgeEvidence(step(undefined, false), NOW)).toEqual({ kind: 'go' });
  });

  it('refuses a destructive step that names no evidence', () => {
    expect(judgeEvidence(step([]), NOW)).toEqual({
      kind: 'refuse',
      reasons: ['step wipe:b is destructive and names no evidence: not running it'],
    });
    expect(judgeEvidence(step(), NOW).kind).toBe('refuse');
  });

  it('refuses on missing evidence and names the claim and why it is unknown', () => {
    const v = judgeEvidence(
      step([
        holds('b is ours'),
        {
          claim: 'no VolumeAttachment claims b',
          source: 'VolumeAttachments',
          observedAt: ago(1),
          status: 'missing',
          detail: 'API unreachable',
        },
      ]),
      NOW,
    );
    expect(v).toEqual({
      kind: 'refuse',
      reasons: ['step wipe:b: no evidence that no VolumeAttachment claims b (VolumeAttachments: API unreachable)'],
    });
  });

  it('refuses on contradictory evidence', () => {
    const v = judgeEvidence(
      step([
        {
          claim: 'every path is dead',
          source: 'multipath -ll vs multipathd',
          observedAt: ago(1),
          status: 'contradicted',
          detail: 'multipathd shows sdb live',
        },
      ]),
      NOW,
    );
    expect(v.kind === 'refuse' && v.reasons[0]).toMatch(/contradictory evidence about whether every path is dead.*sdb live/);
  });

  it('refuses stale evidence, and evidence dated in the future', () => {
    const stale = judgeEvidence(step([holds('b is ours', ago(301))]), NOW, 300_000);
    expect(stale.kind === 'refuse' && stale.reasons[0]).toMatch(/evidence that b is ours is stale: observed 301 s ago.*limit is 300 s/);
    const future = judgeEvidence(step([holds('b is ours', ago(-3600))]), NOW);
    expect(future.kind === 'refuse' && future.reasons[0]).toMatch(/in the future/);
    expect(judgeEvidence(step([holds('b is ours', 'yesterday')]), NOW).kind).toBe('refuse');
  });

  it('makes a persistent claim wait until it held long enough over enough observations', () => {
    const dead = (since: number, samples: number, acrossBoot = false): StepEvidence => ({
      ...holds('every path of mpatha is dead'),
      persistence: { since: ago(since), samples, acrossBoot, mustHoldMs: 60_000, minSamples: 2 },
    });
    const one = judgeEvidence(step([dead(0, 1)]), NOW);
    expect(one).toMatchObject({ kind: 'wait', until: new Date(NOW.getTime() + 60_000) });
    expect(one.kind === 'wait' && one.why).toMatch(/held for 0 s over 1 observation\(s\); needs 60 s over at least 2/);
    // Long enough but a single sample: still one more look.
    expect(judgeEvidence(step([dead(120, 1)]), NOW).kind).toBe('wait');
    // Two samples, too young.
    expect(judgeEvidence(step([dead(30, 2)]), NOW)).toMatchObject({ kind: 'wait', until: new Date(NOW.getTime() + 30_000) });
    expect(judgeEvidence(step([dead(61, 2)]), NOW)).toEqual({ kind: 'go' });
    // Across a reboot of the node: enough on its own.
    expect(judgeEvidence(step([dead(0, 1, true)]), NOW)).toEqual({ kind: 'go' });
  });
});

type Step = PlannedStep & { file: string };
const job = toyJob;

function toy(evidence: StepEvidence[] | undefined): RunbookDefinition<'local-pv-placeholder', object, Step> {
  const planned: Plan<Step> = { kind: 'steps', summary: 'wipe b', steps: [{ ...step(evidence), file: '/work/b' }] };
  return {
    runbook: 'local-pv-placeholder',
    observe: async () => ({}),
    plan: () => planned,
    steps: {
      isDone: async (s, host) => (await host.readFile(s.file)) === null,
      apply: async (s, host) => void (await host.unlink(s.file)),
    },
    verify: async () => ({ ok: true, checks: [] }),
  };
}

describe('the engine and a step’s evidence', () => {
  const run = async (evidence: StepEvidence[] | undefined, mode: Mode = 'enforce') => {
    const host = new FakeHost();
    await host.writeFile('/work/b', 'x');
    const audit: string[] = [];
    const ctx: RunbookContext = {
      jobId: job.key,
      attempt: 1,
      mode,
      ranOn: 'worker-1',
      log: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      audit: async (action, target, why) => void audit.push(`${action} ${target} ${why}`),
    };
    const out = await runRunbook(toy(evidence), job, ctx, { host, stateDir: '/state', now: () => NOW }).catch((e: unknown) => e);
    return { out, host, audit, left: await host.readFile('/work/b') };
  };

  it('runs the step on positive evidence, keeps it in the result and writes it to the audit trail', async () => {
    const { out, audit, left } = await run([holds('b is ours')]);
    expect(left).toBeNull();
    expect(out).toMatchObject({
      outcome: 'succeeded',
      steps: [{ id: 'wipe:b', status: 'done', evidence: [{ claim: 'b is ours', status: 'holds' }] }],
    });
    expect(audit).toEqual(['destructive-step job/lpv_test_0123456789ab/wipe:b wipe b; evidence: b is ours (test probe)']);
  });

  it('refuses, touches nothing, and audits the reason when the evidence is missing', async () => {
    const { out, audit, left } = await run([{ claim: 'b is ours', source: 'owner file', observedAt: ago(1), status: 'missing', detail: 'unreadable' }]);
    expect(left).toBe('x');
    expect(out).toBeInstanceOf(RefusedError);
    expect((out as RefusedError).reasons).toEqual(['step wipe:b: no evidence that b is ours (owner file: unreadable)']);
    expect((out as RefusedError).result).toMatchObject({ outcome: 'refused', steps: [] });
    expect(audit).toEqual([expect.stringMatching(/^refused job\/lpv_test_0123456789ab step wipe:b: no evidence that b is ours/)]);
  });

  it('refuses a destructive step without evidence in dry-run too', async () => {
    const { out } = await run(undefined, 'dry-run');
    expect(out).toBeInstanceOf(RefusedError);
  });

  it('parks the job until a young claim matures (enforce), and only says so in dry-run', async () => {
    const young = {
      ...holds('every path is dead'),
      persistence: { since: ago(10), samples: 1, acrossBoot: false, mustHoldMs: 60_000, minSamples: 2 },
    };
    const enforce = await run([young]);
    expect(enforce.left).toBe('x');
    expect(enforce.out).toBeInstanceOf(ParkedError);
    expect((enforce.out as ParkedError).parking).toMatchObject({ reason: 'evidence', until: new Date(NOW.getTime() + 50_000) });
    const dry = await run([young], 'dry-run');
    expect(dry.left).toBe('x');
    expect(dry.out).toMatchObject({
      outcome: 'planned',
      steps: [{ status: 'would-run', waitsFor: expect.stringMatching(/enforce waits until 2026-12-04T03:00:50/) }],
    });
  });
});
