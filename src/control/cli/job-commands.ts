import type { IncidentDetail } from '../console/incident-detail.ts';
import { retriedFrom, type IncidentStep } from '../console/incident.ts';
import { shellLine } from '../console/shell-quote.ts';
import type { ApiClient } from './api-client.ts';
import { ApprovalAnswer, IncidentAnswer, JobAnswer, read } from './answers.ts';
import { enc, type Opts, type Out } from './command-kit.ts';
import { fields, table } from './table.ts';

// The subcommands that read one job: `job` (its record, plan and commands) and `show` (the
// incident as the console's page shows it).

export async function job(api: ApiClient, id: string, o: Opts, out: Out): Promise<void> {
  const rawJob = await api.get(`/v1/jobs/${enc(id)}`);
  const rawApproval = await api.get(`/v1/jobs/${enc(id)}/approval`).catch(() => undefined);
  if (o.json) return out(JSON.stringify({ ...(rawJob as object), ...(rawApproval ? { approval: rawApproval } : {}) }, null, 2));
  const j = read(`GET /v1/jobs/${id}`, JobAnswer, rawJob);
  const approval = rawApproval === undefined ? undefined : read(`GET /v1/jobs/${id}/approval`, ApprovalAnswer, rawApproval);
  const result = j.result ?? j.progress?.result;
  const parked = j.progress?.parked;
  out(
    fields([
      ['job', j.id],
      ['runbook', j.runbook],
      ['node', j.node],
      ['queue', j.queue],
      ['state', j.state],
      ['attempts', j.attemptsMade],
      ['created', j.createdAt],
      ['finished', j.finishedAt],
      ['mode', result ? `${result.mode}${result.modeWhy ? ` (${result.modeWhy})` : ''}` : undefined],
      ['outcome', result?.outcome],
      ['summary', result?.summary],
      ['failed', j.failedReason],
      ['waiting', parked && j.state === 'delayed' ? `${parked.reason} since ${parked.since}: ${parked.why}` : undefined],
      [
        'approval',
        approval
          ? `${approval.state}${approval.decidedBy ? ` by ${approval.decidedBy}` : ''}${approval.why ? ` (${approval.why})` : ''}, expires ${approval.expiresAt}`
          : undefined,
      ],
    ]),
  );
  for (const r of result?.refusals ?? []) out(`refused: ${r}`);
  const done = new Map((result?.steps ?? []).map((s) => [s.id, s]));
  const planned = parked?.plan?.steps ?? result?.plan?.steps ?? result?.steps ?? [];
  if (planned.length) {
    out(`\nplan${parked?.plan?.summary ? `: ${parked.plan.summary}` : ''}`);
    out(
      table(
        ['step', 'status', 'kind', 'description'],
        planned.map((s) => {
          const d = done.get(s.id);
          return [
            s.id,
            d?.status ?? 'planned',
            `${s.destructive ? 'destructive' : ''}${s.risk === 'high' || s.highRisk ? ' high-risk' : ''}`.trim(),
            s.description,
          ];
        }),
        90,
      ),
    );
  }
  const commands = result?.commands ?? [];
  if (commands.length) {
    out('\ncommands');
    out(
      table(
        ['exit', 'ms', 'command', 'output'],
        commands.map((c) => [
          c.timedOut ? 'timeout' : (c.exitCode ?? 'n/a'),
          Math.round(c.durationMs ?? 0),
          c.argv.join(' '),
          (c.stderr || c.stdout || '').trim(),
        ]),
        80,
      ),
    );
  }
  if (j.log?.length) out(`\nlog\n${j.log.map((l) => `  ${l}`).join('\n')}`);
}

/** Lines of a command's output shown under it; --json has all of it. */
const OUTPUT_LINES = 12;
const VERDICT: Record<string, string> = { holds: 'HOLDS', fails: 'FAILS', missing: 'MISSING (unknown)', contradicted: 'CONTRADICTED' };
const indent = (text: string, pad: string): string =>
  text
    .split('\n')
    .map((l) => `${pad}${l}`)
    .join('\n');

function stepLines(s: IncidentStep, n: number): string[] {
  const out = [`${n + 1}. ${s.id}  ${s.status}${s.destructive ? '  destructive' : ''}${s.risk === 'high' ? '  high-risk' : ''}`, `   ${s.description}`];
  if (s.error) out.push(`   error: ${s.error}`);
  if (s.waitsFor) out.push(`   ${s.waitsFor}`);
  if (s.evidence.length) {
    out.push('   evidence:');
    for (const e of s.evidence)
      out.push(
        `     ${(VERDICT[e.status] ?? e.status).padEnd(8)} ${e.claim}${e.detail ? ` (${e.detail})` : ''}; seen by ${e.source}${e.observedAt ? ` at ${e.observedAt}` : ''}`,
      );
  } else if (s.destructive) {
    out.push('   evidence: none named (the engine refuses a destructive step without it)');
  }
  if (s.plannedArgv?.length) {
    out.push('   would run:');
    for (const a of s.plannedArgv) out.push(`     $ ${shellLine(a)}`);
  } else if (s.status === 'planned') {
    out.push('   would run: not recorded for this step');
  }
  if (s.plannedNote) out.push(`   ${s.plannedNote}`);
  for (const c of s.commands) {
    out.push(
      `   ran: $ ${shellLine(c.argv)} — exit ${c.timedOut ? 'timed out' : (c.exitCode ?? 'n/a (not run)')}${c.durationMs !== undefined ? `, ${Math.round(c.durationMs)} ms` : ''}`,
    );
    const text = `${c.stdout}${c.stderr ? `${c.stdout ? '\n' : ''}--- stderr ---\n${c.stderr}` : ''}`.replace(/\n+$/, '');
    if (!text) continue;
    const lines = text.split('\n');
    out.push(indent(lines.slice(0, OUTPUT_LINES).join('\n'), '     | '));
    if (lines.length > OUTPUT_LINES) out.push(`     | ... ${lines.length - OUTPUT_LINES} more line(s) (--json: all)`);
  }
  return out;
}

/** One incident as the console's page shows it: signal, evidence with verdicts, planned and run argv, audit. */
export async function show(api: ApiClient, id: string, o: Opts, out: Out): Promise<void> {
  const raw = await api.get(`/v1/jobs/${enc(id)}/incident`);
  if (o.json) return out(JSON.stringify(raw, null, 2));
  // Its shape checked, the page's own type names the rest (the receiver's IncidentDetail).
  const d = read(`GET /v1/jobs/${id}/incident`, IncidentAnswer, raw) as unknown as IncidentDetail;
  const i = d.incident;
  const prev = i.retry ? retriedFrom(i.retry) : undefined;
  out(
    fields([
      ['job', `${i.id} (queue ${i.queue})`],
      ['runbook', i.runbook],
      ['node', i.node],
      ['record', i.recordNames ? `names node ${i.recordNames}, but it is in ${i.node}'s queue: it is ${i.node}'s, whatever its record says` : undefined],
      ['state', `${i.state}, attempts ${i.attemptsMade}`],
      ['mode', i.mode ? `${i.mode}${i.modeWhy ? ` (${i.modeWhy})` : ''}` : undefined],
      [
        'outcome',
        i.waiting
          ? `waiting (${i.waiting.reason}) since ${i.waiting.since ?? '?'}: ${i.waiting.why}`
          : [i.outcome, i.summary ?? i.failedReason].filter(Boolean).join(': '),
      ],
      ['retry of', prev],
      ['retried as', d.retriedAs ? `${d.retriedAs.id} (${d.retriedAs.state})` : undefined],
      ['created', i.createdAt],
      ['finished', i.finishedAt],
      ['ran on', i.ranOn],
      [
        'approval',
        d.approval
          ? `${d.approval.state}${d.approval.decidedBy ? ` by ${d.approval.decidedBy}` : ''}${d.approval.why ? ` (${d.approval.why})` : ''}, expires ${d.approval.expiresAt}`
          : undefined,
      ],
      ['job data', i.valid ? undefined : 'does not match the job catalogue: shown as stored, never run'],
      ['kubernetes', d.record ? `kubectl get volumeremediation ${d.record.name} -n ${d.record.namespace}` : undefined],
    ]),
  );
  out('\nwhat started it');
  for (const s of i.signals) out(`  ${s.source}: ${s.summary}`);
  if (!i.signals.length) out('  no signal recorded');
  if (i.refusals.length) out(`\nrefused\n${i.refusals.map((r) => `  ${r}`).join('\n')}`);
  out('\nplan and steps');
  if (!i.steps.length) out('  no steps');
  for (const [n, s] of i.steps.entries()) out(stepLines(s, n).join('\n'));
  out('\nkubernetes events it wrote');
  if ('unknown' in d.events) out(`  unknown: ${d.events.unknown}`);
  else if (!d.events.events.length) out('  none found');
  else
    out(
      indent(
        table(
          ['last seen', 'type', 'reason', 'on', 'count', 'note'],
          d.events.events.map((e) => [e.lastAt, e.type, e.reason, e.regarding, e.count, e.note]),
          80,
        ),
        '  ',
      ),
    );
  out('\naudit trail');
  if (!d.audit.length) out('  no entries');
  else
    out(
      indent(
        table(
          ['when', 'who', 'what', 'why'],
          d.audit.map((e) => [
            e.at,
            e.by,
            e.target === `job/${i.id}` ? e.action : `${e.action} ${e.target}`,
            `${e.why}${e.verified === false ? ` [NOT VERIFIED: ${e.unverifiedWhy ?? 'not written by the process that acted'}]` : ''}`,
          ]),
          80,
        ),
        '  ',
      ),
    );
}
