// `npm run test:security`: the attacks of issue 20 as tests. docs/threat-model.md names, for each
// control, the test that shows it; this runs exactly those (every `test/**.test.ts` path the
// document names), across the unit, integration and faults tiers. One list, in the document:
// test/unit/repo/docs/threat-model.test.ts fails when it names a test that does not exist.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { securityTests } from './lib/security-tests.ts';

const { files, missing } = securityTests();
if (missing.length > 0) {
  process.stderr.write(`docs/threat-model.md names tests that do not exist: ${missing.join(', ')}\n`);
  process.exit(1);
}
const vitest = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'vitest', 'vitest.mjs');
process.stdout.write(`test:security: ${files.length} test files named by docs/threat-model.md\n`);
const r = spawnSync(process.execPath, [vitest, 'run', '--project', 'unit', '--project', 'integration', '--project', 'faults', ...files], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
