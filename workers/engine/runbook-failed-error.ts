import type { RunbookResult } from '../../src/core/catalogue/result.ts';
import { TransientError } from '../../src/core/errors.ts';

/**
 * A step or the verification failed. Transient (the retry resumes from the journal), and it
 * carries the result so far, so the node agent can show what was done before the failure.
 */
export class RunbookFailedError extends TransientError {
  override name = 'RunbookFailedError';
  readonly result: RunbookResult;
  constructor(message: string, result: RunbookResult) {
    super(message);
    this.result = result;
  }
}
