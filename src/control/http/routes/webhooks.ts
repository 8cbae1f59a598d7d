import { Router, type Request, type RequestHandler, type Response } from 'express';
import { parseWebhook, WEBHOOK_SOURCES, type ParseOptions, type WebhookSource } from '../../ingest/parse.ts';
import { explain, ingest, type IngestDeps } from '../../ingest/ingest.ts';
import { type Enqueued, StoreUnavailableError } from '../../../core/jobs/job-store.ts';
import { RepeatAnswers, envelopeValid } from '../../ingest/repeat-answers.ts';
import { bodyText } from '../json-body.ts';
import type { Counter, Histogram } from 'prom-client';
import type { ReceiverMetrics } from '../../../adapters/observability/metrics.ts';
import { RUNBOOKS, type RunbookName } from '../../../core/catalogue/jobs.ts';
import type { Logger } from '../../../adapters/observability/logger.ts';
import type { Ignored } from '../../../core/signals/index.ts';

// A thin edge, no business logic: parse, validate, hand over, answer. 202 once every job is stored
// or folded into an existing one; 422 for a body that fails its schema; 503 + Retry-After only
// when storing failed, because that is the one case where the sender retrying helps.

export interface WebhookDeps extends IngestDeps, ParseOptions {
  metrics: ReceiverMetrics;
  log: Logger;
  retryAfterSeconds: number;
  /** Answers for repeated Alertmanager bodies (default: a private one of the default size). */
  repeats?: RepeatAnswers;
}

type RunbookCounters = Record<RunbookName, Counter.Internal>;

/**
 * The counters a webhook touches, bound to their labels once: prom-client hashes a label set on
 * every inc({...}), a bound child does not (the hot path is a few microseconds).
 */
function boundMetrics(metrics: ReceiverMetrics) {
  const perRunbook = (c: Counter<'runbook'>): RunbookCounters =>
    Object.fromEntries(RUNBOOKS.map((runbook) => [runbook, c.labels({ runbook })])) as RunbookCounters;
  const perSource = Object.fromEntries(
    WEBHOOK_SOURCES.map((source) => [
      source,
      {
        seconds: metrics.requestSeconds.labels({ route: source }),
        accepted: metrics.webhooks.labels({ source, outcome: 'accepted' }),
        repeats: metrics.repeatAnswers.labels({ source }),
      },
    ]),
  ) as Record<WebhookSource, { seconds: Histogram.Internal<'route'>; accepted: Counter.Internal; repeats: Counter.Internal }>;
  return { perSource, enqueued: perRunbook(metrics.enqueued), deduplicated: perRunbook(metrics.deduplicated) };
}

/**
 * What an accepted webhook counts: stored / deduplicated jobs, one inc per runbook and outcome
 * instead of one per job (a grouped payload holds dozens), and the ignored reasons.
 * `allDeduplicated`: a repeat answer, whose remembered jobs carry their first answer's flag.
 */
function countAccepted(
  m: ReturnType<typeof boundMetrics>,
  metrics: ReceiverMetrics,
  accepted: readonly Enqueued[],
  ignored: readonly Ignored[],
  allDeduplicated = false,
): void {
  const counterOf = (a: Enqueued) => (allDeduplicated || a.deduplicated ? m.deduplicated : m.enqueued)[a.runbook];
  if (accepted.length === 1) counterOf(accepted[0]!).inc();
  else if (accepted.length > 1) {
    const counts = new Map<RunbookCounters[RunbookName], number>();
    for (const a of accepted) {
      const counter = counterOf(a);
      counts.set(counter, (counts.get(counter) ?? 0) + 1);
    }
    for (const [counter, n] of counts) counter.inc(n);
  }
  for (const i of ignored) metrics.ignored.inc({ source: i.source, reason: i.reason });
}

/** 202 with the result: res.json()'s content-type lookup and charset handling, done once here. */
function accepted(res: Response, body: unknown): void {
  acceptedText(res, JSON.stringify(body));
}

function acceptedText(res: Response, text: string): void {
  res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const isSource = (v: unknown): v is WebhookSource => typeof v === 'string' && (WEBHOOK_SOURCES as readonly string[]).includes(v);

/** `before`: what every webhook route runs first (auth, body reading). */
export function webhookRoutes(deps: WebhookDeps, before: readonly RequestHandler[] = []): Router {
  const r = Router();
  const m = boundMetrics(deps.metrics);
  const repeats = deps.repeats ?? new RepeatAnswers();

  const handle = (source: WebhookSource) => async (req: Request, res: Response) => {
    const end = m.perSource[source].seconds.startTimer();
    try {
      // An Alertmanager body whose alerts were seen before exactly as written, and whose jobs are
      // all still known: the same answer without validating or triaging the alerts again (why
      // that is exact: ingest/repeat-answers.ts).
      const text = source === 'alertmanager' ? bodyText(req) : undefined;
      const seen = text !== undefined ? repeats.find(text) : undefined;
      const repeat = seen?.answer;
      if (repeat && deps.dispatcher.allKnown(repeat.jobs) && (seen.sameBody || envelopeValid(req.body))) {
        m.perSource[source].accepted.inc();
        m.perSource[source].repeats.inc();
        countAccepted(m, deps.metrics, repeat.jobs, repeat.ignored, true);
        if (deps.log.isLevelEnabled('debug')) deps.log.debug({ source, stored: [], deduplicated: repeat.jobs.map((j) => j.key) }, 'webhook answered');
        return acceptedText(res, repeat.text);
      }
      const parsed = parseWebhook(source, req.body, deps);
      if (!parsed.ok) {
        deps.metrics.webhooks.inc({ source, outcome: 'invalid' });
        return res.status(422).json({ error: `payload does not match the ${source} schema: ${parsed.error}` });
      }
      let result: Awaited<ReturnType<typeof ingest>>;
      try {
        result = await ingest(parsed.signals, parsed.ignored, deps);
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) throw err;
        deps.metrics.webhooks.inc({ source, outcome: 'unavailable' });
        deps.log.warn({ source, err: err.message }, 'could not store jobs; answering 503 so the sender retries');
        return res.set('Retry-After', String(deps.retryAfterSeconds)).status(503).json({ error: 'jobs could not be stored, retry later' });
      }
      m.perSource[source].accepted.inc();
      countAccepted(m, deps.metrics, result.accepted, result.ignored);
      // The dispatcher logs what it stored (one info line per Redis call, receiver.ts); what
      // each request was answered is a debug line, so a storm does not become a storm of logs.
      if (result.accepted.length > 0 && deps.log.isLevelEnabled('debug')) {
        deps.log.debug(
          {
            source,
            stored: result.accepted.filter((a) => !a.deduplicated).map((a) => a.id),
            deduplicated: result.accepted.filter((a) => a.deduplicated).map((a) => a.id),
          },
          'webhook answered',
        );
      }
      // Remembered when it stored something: the alerts that made the jobs are the ones whose
      // retries, re-notifications and HA copies come back. Alerts that only repeated known jobs
      // (a group that changed) rarely come back as they were; keeping each of those cost more
      // than it saved (bench: 'repeat, body differs').
      if (text !== undefined && result.accepted.some((a) => !a.deduplicated)) repeats.remember(text, seen?.alerts, result);
      return accepted(res, result);
    } finally {
      end();
    }
  };

  r.post('/v1/alertmanager', ...before, handle('alertmanager'));
  r.post('/v1/events', ...before, handle('events'));
  r.post('/v1/npd', ...before, handle('npd'));

  return r;
}

/**
 * What a webhook payload would do, storing nothing: an operator's question (the CLI's
 * `explain`), so it sits behind the operator gate, not the webhook token.
 */
export function explainRoutes(deps: WebhookDeps): Router {
  const r = Router();
  r.post('/v1/explain', async (req, res) => {
    const source = req.query['source'];
    if (!isSource(source)) return res.status(400).json({ error: `query parameter source must be one of ${WEBHOOK_SOURCES.join(', ')}` });
    const parsed = parseWebhook(source, req.body, deps);
    if (!parsed.ok) return res.status(422).json({ error: `payload does not match the ${source} schema: ${parsed.error}` });
    const e = await explain(parsed.signals, parsed.ignored, deps);
    return res.status(200).json({
      signals: e.signals.map(({ evidence, ...s }) => ({ ...s, evidence: evidence.summary })),
      jobs: e.jobs.map((j) => ({
        runbook: j.runbook,
        node: 'node' in j.target ? j.target.node : undefined,
        key: j.key,
        target: j.target,
        evidence: j.evidence,
      })),
      ignored: e.ignored,
    });
  });
  return r;
}
