import { UnrecoverableError } from 'bullmq';

// Errors say whether to retry (DESIGN, "Contracts"; CONVENTIONS 3).
// - TransientError: the world may change (a command timed out, Redis blipped): retry with backoff.
// - RefusedError: a safety interlock tripped. Retrying would only trip it again: report, stop.
// - PermanentError: the job itself is wrong (bad data, unknown runbook): stop.
// Anything else is treated as transient: an unexpected bug is retried a bounded number of
// times and then fails visibly, which beats dropping an incident.

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

export function shouldRetry(err: unknown): boolean {
  return !(err instanceof RefusedError || err instanceof PermanentError || err instanceof UnrecoverableError);
}

/** What a BullMQ processor throws: UnrecoverableError ends retries, anything else is retried. */
export function forBullmq(err: unknown): Error {
  if (shouldRetry(err)) return err instanceof Error ? err : new TransientError(String(err));
  const e = err as Error;
  return new UnrecoverableError(`${e.name}: ${e.message}`);
}
