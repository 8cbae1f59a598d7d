import { describe, expect, it } from 'vitest';
import { securityTests } from '../../../../scripts/lib/security-tests.ts';

// docs/threat-model.md is the list `npm run test:security` runs: every test it names must exist,
// and every trust boundary of the document must name at least one.
describe('docs/threat-model.md', () => {
  it('names only tests that exist, covering each section', () => {
    const { files, missing } = securityTests();
    expect(missing).toEqual([]);
    for (const t of [
      'test/int/core/trust/signed-work.int.test.ts',
      'test/int/core/controls/sealed-controls.int.test.ts',
      'test/int/control/sources/event-trust.int.test.ts',
      'test/int/control/auth/operator-identity.int.test.ts',
      'test/int/control/http/dashboard-security.int.test.ts',
      'test/unit/repo/deploy/rbac.test.ts',
      'test/faults/fuzz.fault.test.ts',
      'test/int/control/receiver/receiver-auth.int.test.ts',
    ]) {
      expect(files).toContain(t);
    }
  });

  it('would catch a test that is gone', () => {
    expect(securityTests('see `test/int/no-such.int.test.ts`').missing).toEqual(['test/int/no-such.int.test.ts']);
  });
});
