// Errors say whether to retry; shouldRetry is the one place that decides (docs/jobs.md, "Retries and deduplication windows").
// - TransientError: the world may change (a command timed out, Redis blipped): retry with backoff.
// - RefusedError: a safety interlock tripped. Retrying would only trip it again: report, stop.
// - PermanentError: the job itself is wrong (bad data, unknown runbook): stop.
// - FinalError: stop now, with this message as the job's failure, as it is (untrusted work).
// Anything else is treated as transient: an unexpected bug is retried a bounded number of
// times and then fails visibly, which beats dropping an incident. The job store's consumer turns
// these into its library's terms (src/adapters/jobstore/consumer.ts).

export class TransientError extends Error {
  override name = 'TransientError';
}

export class RefusedError extends Error {
  override name = 'RefusedError';
  readonly reasons: readonly string[];
  readonly result: unknown;
  constructor(reasons: readonly string[], result?: unknown) {
    super(`refused: ${reasons.join('; ')}`);
    this.reasons = reasons;
    this.result = result;
  }
}

export class PermanentError extends Error {
  override name = 'PermanentError';
}

export class FinalError extends Error {
  override name = 'FinalError';
}

export function shouldRetry(err: unknown): boolean {
  return !(err instanceof RefusedError || err instanceof PermanentError || err instanceof FinalError);
}

/**
 * An error's name as a job's reader sees it. zod's mini API (src/core/zod.ts) names its parse
 * errors `$ZodError`, the classic API `ZodError`: a host command's JSON that does not parse reads
 * `ZodError: ...` whichever API built the schema.
 */
export const errorName = (e: Error): string => (e.name === '$ZodError' ? 'ZodError' : e.name);

/** How a failure reads on the job: as it is when it is retried or final, named when it ends retries. */
export function failureText(err: unknown): string {
  if (err instanceof FinalError) return err.message;
  const e = err instanceof Error ? err : new Error(String(err));
  return shouldRetry(err) ? e.message : `${errorName(e)}: ${e.message}`;
}
