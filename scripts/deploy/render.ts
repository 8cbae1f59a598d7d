import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { ChartError, RENDERED_FILE, renderedFileText } from './chart.ts';

// Keeps deploy/volume-medic.yaml equal to the chart rendered with deploy/volume-medic.values.yaml.
//   node scripts/deploy/render.ts             rewrite deploy/volume-medic.yaml
//   node scripts/deploy/render.ts --check     exit 1 when it is stale (CI)

const file = relative(process.cwd(), RENDERED_FILE);
try {
  const want = renderedFileText();
  if (process.argv[2] === '--check') {
    let have = '';
    try {
      have = readFileSync(RENDERED_FILE, 'utf8');
    } catch {
      // missing: stale
    }
    if (have !== want) {
      console.error(`${file} is stale: run \`npm run deploy:render\` and commit it`);
      process.exit(1);
    }
    console.log(`${file} is up to date`);
  } else {
    writeFileSync(RENDERED_FILE, want);
    console.log(`wrote ${file} from the chart`);
  }
} catch (err) {
  if (err instanceof ChartError) {
    console.error(err.message);
    process.exit(2);
  }
  throw err;
}
