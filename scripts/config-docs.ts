import { readFileSync, writeFileSync } from 'node:fs';
import { configurationReference, REFERENCE_PATH } from './lib/config-reference.ts';

// `node scripts/config-docs.ts`: writes docs/configuration.md from the settings' declarations.
// `--check`: writes nothing, and fails when the file is not what the declarations give (npm run lint).

const want = configurationReference();
if (process.argv.includes('--check')) {
  let have = '';
  try {
    have = readFileSync(REFERENCE_PATH, 'utf8');
  } catch {
    // Missing: differs.
  }
  if (have !== want) {
    console.error(`${REFERENCE_PATH} differs from the settings' declarations (src/core/config/sections): run node scripts/config-docs.ts`);
    process.exit(1);
  }
} else {
  writeFileSync(REFERENCE_PATH, want);
  console.log(`wrote ${REFERENCE_PATH}`);
}
