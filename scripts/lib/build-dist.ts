import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { bundleNodeAgent } from './bundle-node-agent.ts';

// `npm run build` (tsc, then the node agent's bundle) into a folder of its own, runnable in
// place: the deployable JavaScript for tests and benchmarks that must run what the image runs
// (the commands of deploy/charts/volume-medic/templates/*.yaml), without touching the checkout's
// dist/. The folder gets package.json ("type": "module") and a link to the checkout's node_modules.

const run = promisify(execFile);
export const REPO = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Returns the folder; the JavaScript is under `<folder>/dist/` as in the image. `everything`:
 * also bench/, test/ and scripts/ (a benchmark's stand-in processes under the deployed flags).
 */
export async function buildDist(opts: { everything?: boolean } = {}): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'volume-medic-dist-'));
  const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
  const args = opts.everything ? ['-p', join(REPO, 'tsconfig.json'), '--noEmit', 'false', '--rootDir', REPO] : ['-p', join(REPO, 'tsconfig.build.json')];
  await run(process.execPath, [tsc, ...args, '--outDir', join(out, 'dist')], { cwd: REPO, timeout: 180_000 });
  await bundleNodeAgent(join(out, 'dist/node-agent'));
  copyFileSync(join(REPO, 'package.json'), join(out, 'package.json'));
  symlinkSync(join(REPO, 'node_modules'), join(out, 'node_modules'), 'dir');
  return out;
}
