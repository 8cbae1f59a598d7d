import { ingest, type IngestDeps } from '../ingest/ingest.ts';
import { StoreUnavailableError } from '../../core/jobs/job-store.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { Ignored, Signal } from '../../core/signals/index.ts';
import type { Sleep } from '../../adapters/kube/supervised-informer.ts';

// Where the watches hand their signals: the one ingest path the webhooks use. Unlike a webhook
// sender, a watch cannot "retry later", so a store failure (Redis down) is retried here with capped
// backoff; what still fails is logged and left to the next reconcile run.

export interface SignalSink {
  submit(signals: readonly Signal[], origin: string): Promise<void>;
}

export interface IngestSinkOptions {
  deps: IngestDeps;
  log?: Logger;
  sleep: Sleep;
  signal?: AbortSignal;
  /** Attempts to store, including the first. Default 5. */
  attempts?: number;
  initialMs?: number;
  maxMs?: number;
  onStored?: (origin: string, jobs: number) => void;
  onStoreFailed?: (origin: string) => void;
  /** What triage ignored (volume_medic_signals_ignored_total counts it, as for the webhooks). */
  onIgnored?: (ignored: readonly Ignored[]) => void;
}

export function ingestSink(o: IngestSinkOptions): SignalSink {
  const attempts = o.attempts ?? 5;
  return {
    async submit(signals: readonly Signal[], origin: string): Promise<void> {
      if (signals.length === 0) return;
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await ingest([...signals], [], o.deps);
          // Which watch a new job came from (the dispatcher's 'jobs stored' line says what Redis
          // got); a reconcile that finds known incidents again is a debug line, not one per job.
          for (const a of r.accepted) {
            const line = { origin, key: a.key, runbook: a.runbook, queue: a.queue, deduplicated: a.deduplicated };
            if (a.deduplicated) o.log?.debug(line, 'watch signal already stored');
            else o.log?.info(line, 'watch signal stored');
          }
          for (const i of r.ignored) o.log?.debug({ origin, reason: i.reason, detail: i.detail }, 'watch signal ignored by triage');
          if (r.ignored.length > 0) o.onIgnored?.(r.ignored);
          o.onStored?.(origin, r.accepted.length);
          return;
        } catch (err) {
          if (!(err instanceof StoreUnavailableError) || attempt >= attempts || o.signal?.aborted) {
            o.log?.error({ origin, err: (err as Error).message, attempt }, 'could not store a watch signal; the next reconcile will look again');
            o.onStoreFailed?.(origin);
            return;
          }
          await o.sleep(Math.min((o.initialMs ?? 1_000) * 2 ** (attempt - 1), o.maxMs ?? 30_000), o.signal);
        }
      }
    },
  };
}
