import { existsSync } from 'node:fs';
import { it } from 'vitest';

// The browser tests' Chromium (Debian's, driven by playwright-core). Where it is missing, a test
// file says so: skipped with a warning on a developer's machine, a failing test in CI (CI set),
// which must install it (.ci/run does).

export const CHROMIUM = process.env['CHROMIUM_BIN'] ?? '/usr/bin/chromium';

/**
 * Call first inside the file's describe: true when Chromium is here; otherwise it registers the
 * test that says so and the caller returns.
 */
export function chromiumOrSay(file: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  const inCi = !!process.env['CI'] && process.env['CI'] !== 'false';
  if (inCi) {
    it('has chromium installed (required when CI is set)', () => {
      throw new Error(`${CHROMIUM} not found: CI must install Debian's chromium (.ci/run does)`);
    });
  } else {
    console.warn(`SKIPPING ${file}: ${CHROMIUM} not found (apt-get install chromium, or set CHROMIUM_BIN). In CI (CI set) this fails instead.`);
    it.skip(`needs ${CHROMIUM} (apt-get install chromium)`, () => {});
  }
  return false;
}
