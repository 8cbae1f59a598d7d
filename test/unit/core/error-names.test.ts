import { describe, expect, it } from 'vitest';
import * as classic from 'zod';
import { z } from '../../../src/core/zod.ts';
import { errorName, failureText, PermanentError } from '../../../src/core/errors.ts';

// A runbook's failure text names the error (workers/engine/stages/failed.ts): a host command's
// JSON that does not parse must read the same whichever zod API built the schema.
describe('errorName', () => {
  const thrown = (f: () => unknown): Error => {
    try {
      f();
    } catch (err) {
      return err as Error;
    }
    throw new Error('did not throw');
  };

  it("names a mini schema's parse error as the classic API names its own", () => {
    const mini = thrown(() => z.object({ loopdevices: z.array(z.string()) }).parse({ loopdevices: 1 }));
    const cl = thrown(() => classic.object({ loopdevices: classic.array(classic.string()) }).parse({ loopdevices: 1 }));
    expect(mini.name).toBe('$ZodError');
    expect(errorName(mini)).toBe('ZodError');
    expect(errorName(cl)).toBe('ZodError');
    expect(`${errorName(mini)}: ${mini.message}`).toBe(`${errorName(cl)}: ${cl.message}`);
  });

  it('leaves every other name as it is', () => {
    expect(errorName(new PermanentError('x'))).toBe('PermanentError');
    expect(errorName(new TypeError('x'))).toBe('TypeError');
    expect(failureText(new PermanentError('no such device'))).toBe('PermanentError: no such device');
  });
});
