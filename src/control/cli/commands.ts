import { readFile } from 'node:fs/promises';
import type { ApiClient } from './api-client.ts';
import {
  ApprovalsAnswer,
  BreakerResetAnswer,
  BreakersAnswer,
  ControlsAnswer,
  DecisionAnswer,
  ExplainAnswer,
  FleetAnswer,
  JobsAnswer,
  PauseAnswer,
  RetryAnswer,
  RevokeAnswer,
  read,
} from './answers.ts';
import { asked, enc, type Opts, type Out, q, UsageError } from './command-kit.ts';
import { table } from './table.ts';

// One function per subcommand: ask the API, then print a readable answer (or the JSON as the
// API gave it, with --json, for scripts). Those that read one job are job-commands.ts.

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
