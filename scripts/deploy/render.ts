import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DEPLOY_DIR, KustomizeError, RENDERED_FILE, renderedFileText, renderKustomization, toYaml } from './kustomize.ts';

// Keeps deploy/volume-medic.yaml equal to the dry-run overlay, without kubectl.
//   node scripts/deploy/render.ts             rewrite deploy/volume-medic.yaml
//   node scripts/deploy/render.ts --check     exit 1 when it is stale (CI)
//   node scripts/deploy/render.ts <dir>       print any kustomization (e.g. deploy/overlays/enforce)

const args = process.argv.slice(2);
try {
  if (args[0] === '--check') {
    const want = renderedFileText();
    let have = '';
    try {
      have = readFileSync(RENDERED_FILE, 'utf8');
    } catch {
      // missing: stale
    }
    if (have !== want) {
      console.error(`${relative(process.cwd(), RENDERED_FILE)} is stale: run \`node scripts/deploy/render.ts\` and commit it`);
      process.exit(1);
    }
    console.log(`${relative(process.cwd(), RENDERED_FILE)} is up to date`);
  } else if (args[0] !== undefined) {
    process.stdout.write(toYaml(renderKustomization(args[0])));
  } else {
    writeFileSync(RENDERED_FILE, renderedFileText());
    console.log(`wrote ${relative(process.cwd(), RENDERED_FILE)} from ${relative(process.cwd(), join(DEPLOY_DIR, 'overlays/dry-run'))}`);
  }
} catch (err) {
  if (err instanceof KustomizeError) {
    console.error(err.message);
    process.exit(2);
  }
  throw err;
}
