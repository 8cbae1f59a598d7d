import { readFile } from 'node:fs/promises';
import type { ApiClient } from './api-client.ts';
import {
  ApprovalAnswer,
  ApprovalsAnswer,
  BreakerResetAnswer,
  BreakersAnswer,
  ControlsAnswer,
  DecisionAnswer,
  ExplainAnswer,
  FleetAnswer,
  IncidentAnswer,
  JobAnswer,
  JobsAnswer,
  PauseAnswer,
  ReleaseAnswer,
  RetryAnswer,
  RevokeAnswer,
  read,
} from './answers.ts';
import type { IncidentDetail } from '../console/incident-detail.ts';
import { retriedFrom, type IncidentStep } from '../console/incident.ts';
import { shellLine } from '../console/shell-quote.ts';
import { fields, table } from './table.ts';

// One function per subcommand: ask the API, then print a readable answer (or the JSON as the
// API gave it, with --json, for scripts).

export interface Opts {
  json: boolean;
  why?: string;
  node?: string;
  state?: string;
  runbook?: string;
  limit?: string;
  source?: string;
  path?: string;
  force?: boolean;
  all?: boolean;
  sort?: string;
}

export type Out = (text: string) => void;

const q = (params: Record<string, string | undefined>): string => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : '';
};
const enc = encodeURIComponent;
/** Who asks is the token's user, recorded by the receiver; only why is ours to say. */
const asked = (o: Opts) => (o.why ? { why: o.why } : {});

/** Alertmanager bodies have `alerts`, NPD condition bodies `conditions`; everything else is a Kubernetes Event. */
export function guessSource(body: unknown): string {
  const b = body as Record<string, unknown> | null;
  if (b && !Array.isArray(b) && Array.isArray(b['alerts'])) return 'alertmanager';
  if (b && !Array.isArray(b) && Array.isArray(b['conditions'])) return 'npd';
  return 'events';
}

export async function explain(api: ApiClient, file: string, o: Opts, out: Out): Promise<void> {
  const text = await readFile(file, 'utf8');
  const source = o.source ?? guessSource(JSON.parse(text));
  const raw = await api.post(`/v1/explain${q({ source })}`, text);
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('POST /v1/explain', ExplainAnswer, raw);
  out(`source: ${source}; ${r.signals.length} signal(s), ${r.jobs.length} job(s) would be stored, ${r.ignored.length} ignored`);
  if (r.jobs.length)
    out(
      `\n${table(
        ['runbook', 'node', 'key'],
        r.jobs.map((j) => [j.runbook, j.node ?? '', j.key]),
        100,
      )}`,
    );
  if (r.ignored.length)
    out(
      `\nignored:\n${table(
        ['reason', 'detail'],
        r.ignored.map((i) => [i.reason, i.detail]),
        100,
      )}`,
    );
}

export async function jobs(api: ApiClient, o: Opts, out: Out): Promise<void> {
  const raw = await api.get(`/v1/jobs${q({ node: o.node, state: o.state, runbook: o.runbook, limit: o.limit })}`);
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('GET /v1/jobs', JobsAnswer, raw);
  if (!r.jobs.length) return out('no jobs');
  out(
    table(
      ['id', 'node', 'runbook', 'state', 'outcome', 'attempts', 'created'],
      r.jobs.map((j) => [
        j.id,
        `${j.node ?? ''}${j.recordNames ? ` (record names ${j.recordNames})` : ''}`,
        j.runbook,
        j.state,
        j.outcome ?? '',
        j.attemptsMade,
        j.createdAt,
      ]),
      200,
    ),
  );
}

/** `fleet`: the console's fleet page. By default the nodes with something open; `--all` every node. */
export async function fleet(api: ApiClient, o: Opts, out: Out): Promise<void> {
  const raw = await api.get(`/v1/fleet${q({ show: o.all ? 'all' : undefined, sort: o.sort, limit: o.limit ?? '500' })}`);
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('GET /v1/fleet', FleetAnswer, raw);
  out(`${r.nodes} node(s), ${r.nodesWithOpen} with open jobs, ${r.agentsMissing} with jobs and no agent (as of ${r.snapshotAt})`);
  for (const b of r.clusterBreakers) out(`breaker ${b.breaker} TRIPPED: ${b.why}`);
  if (r.clusterPaused) out(`cluster PAUSED by ${r.clusterPaused.by} at ${r.clusterPaused.at}`);
  if (!r.rows.length) return out(o.all ? 'no nodes with a queue' : 'nothing open on any node (--all lists every node)');
  out(
    table(
      ['node', 'agent', 'open', 'depth', 'active', 'parked', 'failed', 'breaker / pause'],
      r.rows.map((n) => [
        n.node,
        n.agent,
        n.open,
        n.depth,
        n.active,
        n.parked,
        n.failed,
        [n.breaker ? `breaker: ${n.breaker.why}` : '', n.paused ? `paused by ${n.paused.by}` : ''].filter(Boolean).join('; '),
      ]),
      160,
    ),
  );
  if (r.total > r.rows.length) out(`${r.rows.length} of ${r.total} shown (--limit, up to 500)`);
}

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

export async function decide(api: ApiClient, verb: 'approve' | 'reject', id: string, o: Opts, out: Out): Promise<void> {
  const raw = await api.post(`/v1/jobs/${enc(id)}/${verb}`, asked(o));
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read(`POST /v1/jobs/${id}/${verb}`, DecisionAnswer, raw);
  out(`${id}: ${r.state} by ${r.decidedBy}${r.why ? ` (${r.why})` : ''}; steps: ${r.steps.map((s) => s.id).join(', ')}`);
}

/** A failed job again, as a new job the receiver seals afresh; prints the new job's id. */
export async function retry(api: ApiClient, id: string, o: Opts, out: Out): Promise<void> {
  const raw = await api.post(`/v1/jobs/${enc(id)}/retry`, asked(o));
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read(`POST /v1/jobs/${id}/retry`, RetryAnswer, raw);
  out(`${id}: retried as ${r.id} (queue ${r.queue}) by ${r.recordedAs}; see: volume-medic show ${r.id}`);
}

export async function revoke(api: ApiClient, node: string, o: Opts, out: Out): Promise<void> {
  const raw = await api.post(`/v1/nodes/${enc(node)}/revoke`, asked(o));
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read(`POST /v1/nodes/${node}/revoke`, RevokeAnswer, raw);
  out(
    r.raised
      ? `${r.node}: credentials revoked by ${r.recordedAs}, now of generation ${r.generation}; Redis user ${r.redisUser}. Its agent enrols again for new ones; work sealed before is refused.`
      : `${r.node}: already revoked (generation ${r.generation}, nothing handed out since); Redis user ${r.redisUser}`,
  );
}

export async function pause(api: ApiClient, verb: 'pause' | 'resume', o: Opts, out: Out): Promise<void> {
  const raw = await api.post(`/v1/${verb}`, {
    ...(o.node ? { node: o.node } : {}),
    ...(o.runbook ? { runbook: o.runbook } : {}),
    ...asked(o),
  });
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read(`POST /v1/${verb}`, PauseAnswer, raw);
  const scope = o.runbook ? `runbook ${o.runbook}` : o.node ? `node ${o.node}` : 'cluster';
  out(
    verb === 'pause'
      ? `${scope}: ${r.changed ? `paused by ${r.recordedAs}` : 'was already paused'}`
      : `${scope}: ${r.changed ? `resumed by ${r.recordedAs}, ${r.released} parked job(s) released` : 'was not paused'}`,
  );
  const nodes = Object.keys(r.pauses.nodes);
  const runbooks = Object.keys(r.pauses.runbooks ?? {});
  out(
    `now: cluster ${r.pauses.cluster ? 'PAUSED' : 'running'}${nodes.length ? `; paused nodes: ${nodes.join(', ')}` : ''}${runbooks.length ? `; paused runbooks: ${runbooks.join(', ')}` : ''}`,
  );
}

export async function breakers(api: ApiClient, args: string[], o: Opts, out: Out): Promise<void> {
  if (args[0] === 'reset') {
    if (!args[1]) throw new UsageError('breakers reset <cluster|storm|node/NAME>');
    const raw = await api.post('/v1/breakers/reset', { breaker: args[1], ...asked(o) });
    if (o.json) return out(JSON.stringify(raw, null, 2));
    const r = read('POST /v1/breakers/reset', BreakerResetAnswer, raw);
    return out(`${args[1]}: ${r.cleared ? `reset (was: ${r.cleared.why})` : 'was not tripped'}; ${r.released} parked job(s) released`);
  }
  const raw = await api.get('/v1/breakers');
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('GET /v1/breakers', BreakersAnswer, raw);
  out(
    table(
      ['breaker', 'state', 'count', 'cap', 'window', 'why'],
      r.breakers.map((b) => [
        b.name,
        b.tripped ? `TRIPPED ${b.tripped.at}` : 'ok',
        b.count,
        b.cap === 0 ? 'off' : b.cap,
        `${b.windowSeconds}s`,
        b.tripped?.why ?? '',
      ]),
      100,
    ),
  );
}

export async function modes(api: ApiClient, args: string[], o: Opts, out: Out): Promise<void> {
  if (args[0] === 'set') {
    const [, target, mode] = args;
    if (!target || !mode || !/^(runbook|node)\/.+/.test(target)) throw new UsageError('modes set <runbook/NAME|node/NAME> <dry-run|enforce|default>');
    const [kind, name] = [target.slice(0, target.indexOf('/')), target.slice(target.indexOf('/') + 1)];
    await api.post('/v1/modes', { [kind]: name, mode, ...asked(o) });
  }
  const r = read('GET /v1/controls', ControlsAnswer, await api.get('/v1/controls'));
  if (o.json) return out(JSON.stringify(r.modes, null, 2));
  const m = r.modes;
  out(`default (DEFAULT_MODE): ${m.configured.default}`);
  const rows: unknown[][] = [];
  for (const [rb, mode] of Object.entries(m.configured.runbooks)) rows.push([`runbook/${rb}`, mode, 'configuration', '', '']);
  for (const [rb, ov] of Object.entries(m.overrides.runbooks)) rows.push([`runbook/${rb}`, ov.mode, 'api', `${ov.by} ${ov.at}`, ov.why]);
  for (const [n, ov] of Object.entries(m.overrides.nodes)) rows.push([`node/${n}`, ov.mode, 'api', `${ov.by} ${ov.at}`, ov.why]);
  if (rows.length) out(table(['scope', 'mode', 'from', 'set', 'why'], rows, 80));
}

export async function approvals(api: ApiClient, o: Opts, out: Out): Promise<void> {
  const raw = await api.get('/v1/approvals');
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('GET /v1/approvals', ApprovalsAnswer, raw);
  if (!r.approvals.length) return out('nothing waits for approval');
  out(
    table(
      ['job', 'node', 'runbook', 'expires', 'steps'],
      r.approvals.map((a) => [a.jobId, a.node ?? '', a.runbook, a.expiresAt, a.steps.map((s) => `${s.id} (${s.why})`).join('; ')]),
      90,
    ),
  );
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * An operator's release of a Local PV placeholder, without the disk check (POST
 * /v1/placeholders/release). The API decides what is valid: without --force it answers why force
 * is needed, and the CLI shows that answer.
 */
export async function placeholders(api: ApiClient, args: string[], o: Opts, out: Out): Promise<void> {
  const pv = args[1];
  if (args[0] !== 'release' || !pv || !o.node || !o.path)
    throw new UsageError('placeholders release <pv> --node N --path /dev/disk/by-id/... --force --why TEXT');
  const raw = await api.post('/v1/placeholders/release', {
    node: o.node,
    pv,
    path: o.path,
    ...(o.force ? { force: true } : {}),
    why: o.why ?? '',
  });
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('POST /v1/placeholders/release', ReleaseAnswer, raw);
  const a = r.accepted;
  out(
    `${a.id}: forced release of the placeholder of PV ${pv} on node ${o.node} ${a.deduplicated ? 'was already asked for' : 'stored'} (queue ${a.queue}), asked by ${r.recordedAs}; see: volume-medic job ${a.id}`,
  );
}
