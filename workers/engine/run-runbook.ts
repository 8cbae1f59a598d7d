import { type JobOf, jobNode, type RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { CommandRecord, Outcome, RunbookResult, StepRecord } from '../../src/core/catalogue/result.ts';
import type { Host } from '../host/host.ts';
import { createAuditHost } from '../host/audit-host.ts';
import { createAuditKubeWrites } from '../kube-writes/audit-kube-writes.ts';
import { type KubeWrites, NO_KUBE_WRITES } from '../kube-writes/kube-writes.ts';
import type { RunbookContext } from './registry.ts';
import { PermanentError, RefusedError } from '../../src/core/errors.ts';
import { ParkedError, type GateDecision } from './gate.ts';
import { askCoordination } from './coordinate.ts';
import { describeEvidence, judgeEvidence } from './judge-evidence.ts';
import { Journal } from './journal.ts';
import { planWithCommands } from './planned-commands.ts';
import type { PlannedStep, RunbookDefinition, Verification } from './runbook.ts';
import { RunbookFailedError } from './runbook-failed-error.ts';

// runRunbook shows the order of every runbook: observe -> refuse? -> act (each step through its
// gates) -> verify.
// In dry-run the runbook sees a dry-run host: it looks for real, and each step that is not done
// yet is applied against the simulation, so the result lists the exact commands it would run.

export interface EngineDeps {
  /** The node as it is; the engine wraps it to audit (enforce) or simulate (dry-run). */
  host: Host;
  /** Writes to the Kubernetes API, wrapped like the host; none (every write fails) when absent. */
  kube?: KubeWrites;
  /** Host path of the agent's state directory (journals live in `<stateDir>/journal`). */
  stateDir: string;
  now?: () => Date;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Carries a gate's answer past the step's own error handling (it is not a step failure). */
class GateStop extends Error {
  readonly error: Error;
  constructor(error: Error) {
    super(error.message);
    this.error = error;
  }
}

/** One run of a runbook: what its steps share. */
interface Run<F, S extends PlannedStep> {
  def: RunbookDefinition<RunbookName, F, S>;
  ctx: RunbookContext;
  deps: EngineDeps;
  /** The audited (enforce) or simulating (dry-run) host. */
  host: Host;
  /** The audited (enforce) or simulating (dry-run) Kubernetes writes. */
  kube: KubeWrites;
  /** Only enforce keeps a journal: a dry-run has nothing to resume. */
  journal: Journal | null;
  now: () => Date;
  planned: { summary: string; steps: S[] };
  /** The node the job concerns (its target), whose other tools a destructive step waits for. */
  node: string | undefined;
  steps: StepRecord[];
  result(outcome: Outcome, summary: string, extra?: { refusals?: string[]; verification?: Verification }): RunbookResult;
  fail(err: unknown, summary: string): Error;
}

// long because: the order of every runbook (observe, refuse, steps through their gates, verify) in one place, with the result every exit returns
export async function runRunbook<R extends RunbookName, F, S extends PlannedStep>(
  def: RunbookDefinition<R, F, S>,
  job: JobOf<R>,
  ctx: RunbookContext,
  deps: EngineDeps,
): Promise<RunbookResult> {
  const now = deps.now ?? (() => new Date());
  const commands: CommandRecord[] = [];
  const steps: StepRecord[] = [];
  let stepCommands: CommandRecord[] | null = null;
  const record = (r: CommandRecord): void => {
    commands.push(r);
    stepCommands?.push(r);
  };
  const host = createAuditHost(deps.host, { simulate: ctx.mode === 'dry-run', sink: record });
  const kube = createAuditKubeWrites(deps.kube ?? NO_KUBE_WRITES, { simulate: ctx.mode === 'dry-run', sink: record });
  let facts: unknown;
  let plan: unknown;
  const result = (outcome: Outcome, summary: string, extra: { refusals?: string[]; verification?: Verification } = {}): RunbookResult => ({
    runbook: def.runbook,
    mode: ctx.mode,
    outcome,
    summary,
    facts,
    plan,
    refusals: extra.refusals ?? [],
    steps: steps.map((s) => ({ ...s, commands: [...s.commands] })),
    commands: [...commands],
    ...(extra.verification ? { verification: extra.verification } : {}),
    ranOn: ctx.ranOn,
  });
  const fail = (err: unknown, summary: string): Error => {
    if (err instanceof RefusedError) return new RefusedError(err.reasons, result('refused', summary, { refusals: [...err.reasons] }));
    if (err instanceof PermanentError) return err;
    return new RunbookFailedError(summary, result('failed', summary));
  };

  const journal =
    ctx.mode === 'enforce' ? await Journal.open(deps.host, deps.stateDir, ctx.journalKey ?? ctx.jobId, def.runbook, now, ctx.sameJobWithinMs ?? 0) : null;

  try {
    facts = await def.observe(job, host);
  } catch (err) {
    throw fail(err, `observing failed: ${message(err)}`);
  }
  const planned = def.plan(facts as F, job);
  plan = planned;

  if (planned.kind === 'refuse') {
    await journal?.finish();
    if (journal) await ctx.audit?.('refused', `job/${ctx.jobId}`, planned.reasons.join('; '));
    const summary = `refused: ${planned.reasons.join('; ')}`;
    ctx.log.warn({ jobId: ctx.jobId, reasons: planned.reasons }, 'runbook refused');
    throw new RefusedError(planned.reasons, result('refused', summary, { refusals: planned.reasons }));
  }
  if (planned.kind === 'wait') {
    // Nothing ran and the journal stays as it is: the job looks again when it wakes.
    const summary = `waiting: ${planned.why}`;
    if (!journal) return result('planned', `dry-run, nothing changed: enforce would wait until ${planned.until.toISOString()}: ${planned.why}`);
    throw new ParkedError({ reason: 'evidence', why: planned.why, until: planned.until }, result('waiting', summary), { summary, steps: [] });
  }
  if (planned.kind === 'nothing-to-do') {
    await journal?.finish();
    return result('nothing-to-do', planned.summary);
  }

  const run: Run<F, S> = {
    def: def as unknown as RunbookDefinition<RunbookName, F, S>,
    ctx,
    deps,
    host,
    kube,
    journal,
    now,
    planned,
    node: targetNode(job),
    steps,
    result,
    fail,
  };
  for (const step of planned.steps) {
    if (ctx.signal.aborted) {
      throw new RunbookFailedError('stopped between steps: the worker is shutting down; a retry resumes here', result('failed', 'interrupted'));
    }
    const started = performance.now();
    stepCommands = [];
    const record: StepRecord = {
      id: step.id,
      description: step.description,
      destructive: step.destructive,
      ...(step.evidence ? { evidence: step.evidence } : {}),
      status: 'done',
      startedAt: now().toISOString(),
      durationMs: 0,
      commands: stepCommands,
    };
    steps.push(record);
    try {
      await runStep(run, step, record);
    } catch (err) {
      if (err instanceof GateStop) throw err.error;
      record.status = 'failed';
      record.error = message(err);
      throw fail(err, `step ${step.id} failed: ${message(err)}`);
    } finally {
      record.durationMs = Math.round(performance.now() - started);
      stepCommands = null;
    }
  }

  if (!journal) return result('planned', `dry-run, nothing changed: ${planned.summary}`);
  return verifyRun(run, job, journal);
}

/** The job's target node (jobNode), or undefined for a job that names none. */
function targetNode(job: unknown): string | undefined {
  if (typeof job !== 'object' || job === null || !('target' in job)) return undefined;
  const node: unknown = jobNode(job as never);
  return typeof node === 'string' ? node : undefined;
}

/** One step: skipped when done (journal, or the step's own check), else through its gates and applied. */
async function runStep<F, S extends PlannedStep>(run: Run<F, S>, step: S, record: StepRecord): Promise<void> {
  const { def, ctx, host, kube, journal } = run;
  if (journal?.has(step.id)) {
    record.status = 'skipped-already-done';
    return;
  }
  if (await def.steps.isDone(step, host, kube)) {
    record.status = 'skipped-already-done';
    await journal?.markDone(step.id);
    return;
  }
  await passEvidence(run, step, record);
  await passCoordination(run, step, record);
  await passOperatorGate(run, step, record);
  if (journal && step.destructive) ctx.acting?.(run.node);
  await def.steps.apply(step, host, kube);
  if (journal) await journal.markDone(step.id);
  if (journal && step.destructive) {
    await ctx.audit?.(
      'destructive-step',
      `job/${ctx.jobId}/${step.id}`,
      `${step.description}; evidence: ${(step.evidence ?? []).map(describeEvidence).join('; ')}`,
    );
  }
  record.status = journal ? 'done' : 'would-run';
}

/**
 * Unknown means refuse: a destructive step runs only on positive, fresh, mature evidence. Evidence
 * still maturing parks the job until it may (enforce) or is noted on the step (dry-run).
 */
async function passEvidence<F, S extends PlannedStep>(run: Run<F, S>, step: S, record: StepRecord): Promise<void> {
  const { ctx, journal, steps, planned, result } = run;
  const judged = judgeEvidence(step, run.now());
  if (judged.kind === 'refuse') {
    steps.pop();
    ctx.log.warn({ jobId: ctx.jobId, step: step.id, reasons: judged.reasons }, 'step refused: its evidence does not hold');
    if (journal) await ctx.audit?.('refused', `job/${ctx.jobId}`, judged.reasons.join('; '));
    throw new GateStop(new RefusedError(judged.reasons, result('refused', `refused: ${judged.reasons.join('; ')}`, { refusals: judged.reasons })));
  }
  if (judged.kind !== 'wait') return;
  if (!journal) {
    record.waitsFor = `${judged.why}; enforce waits until ${judged.until.toISOString()}`;
    return;
  }
  steps.pop();
  const view = await planWithCommands(planned, planned.steps.indexOf(step), run.def.steps, simulationPorts(run));
  throw new GateStop(
    new ParkedError({ reason: 'evidence', why: judged.why, until: judged.until }, result('waiting', `waiting before step ${step.id}: ${judged.why}`), view),
  );
}

/**
 * No destructive step while another tool acts on the node (kured's reboot, a drain, a medik8s
 * remediation) or while whether one does cannot be told: asked fresh before each destructive step,
 * it parks the job (reason coordination) until the next recheck (enforce) or is noted on the step
 * (dry-run). Before the operator gate, so a job that waits here takes no breaker slot.
 */
async function passCoordination<F, S extends PlannedStep>(run: Run<F, S>, step: S, record: StepRecord): Promise<void> {
  const { ctx, journal, steps, planned, result } = run;
  if (!step.destructive || !ctx.coordination) return;
  const wait = await askCoordination(ctx.coordination, run.node, run.now());
  if (!wait) return;
  if (!journal) {
    record.waitsFor = `${wait.why}; enforce waits and looks again every ${Math.round(ctx.coordination.recheckMs / 1000)} s`;
    return;
  }
  steps.pop();
  ctx.log.info({ jobId: ctx.jobId, step: step.id, node: run.node, why: wait.why }, 'step waits: another tool acts on the node');
  const view = await planWithCommands(planned, planned.steps.indexOf(step), run.def.steps, simulationPorts(run));
  throw new GateStop(new ParkedError({ reason: 'coordination', ...wait }, result('waiting', `waiting before step ${step.id}: ${wait.why}`), view));
}

/**
 * Only a step about to change something asks the operator controls (modes, pauses, breakers,
 * approvals); a step that did not run is not listed (a parked job shows the steps done so far and
 * its plan, with the exact argv of what is left: planned-commands.ts).
 */
async function passOperatorGate<F, S extends PlannedStep>(run: Run<F, S>, step: S, record: StepRecord): Promise<void> {
  const { ctx, steps, planned, result } = run;
  if (!ctx.gate) return;
  steps.pop();
  let decision: GateDecision;
  try {
    decision = await ctx.gate.beforeStep(step, { summary: planned.summary, steps: planned.steps });
  } catch (err) {
    throw new GateStop(run.fail(err, `step ${step.id} not run: ${message(err)}`));
  }
  if (!decision.go) {
    const shown = await planWithCommands(planned, planned.steps.indexOf(step), run.def.steps, simulationPorts(run));
    throw new GateStop(
      new ParkedError(decision.park, result('waiting', `waiting (${decision.park.reason}) before step ${step.id}: ${decision.park.why}`), shown),
    );
  }
  steps.push(record);
}

/** The raw ports for a parked job's plan view: planWithCommands wraps both in their dry-run twins. */
const simulationPorts = <F, S extends PlannedStep>(run: Run<F, S>): { host: Host; kube: KubeWrites } => ({
  host: run.deps.host,
  kube: run.deps.kube ?? NO_KUBE_WRITES,
});

/** Enforce ends with the runbook's own check of the node; the journal is closed only when it holds. */
async function verifyRun<F, S extends PlannedStep>(run: Run<F, S>, job: unknown, journal: Journal): Promise<RunbookResult> {
  let verified: Verification;
  try {
    verified = await run.def.verify(job as never, run.host, run.planned as never, run.kube);
  } catch (err) {
    throw run.fail(err, `verification could not run: ${message(err)}`);
  }
  if (!verified.ok) {
    const failed = verified.checks.filter((c) => !c.ok).map((c) => c.what);
    const summary = `verification failed: ${failed.join('; ')}`;
    throw new RunbookFailedError(summary, run.result('failed', summary, { verification: verified }));
  }
  await journal.finish();
  return run.result('succeeded', run.planned.summary, { verification: verified });
}
