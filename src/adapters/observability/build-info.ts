import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from '../../core/zod.ts';

// What this process is: the package version, the source revision it was built from, and the Node
// it runs on. Exported as volume_medic_build_info{version,revision,node_version} 1, so a dashboard
// shows which build each replica runs and a rollout can be followed.

export interface BuildInfo {
  version: string;
  revision: string;
  nodeVersion: string;
}

const PackageJson = z.object({ name: z.string(), version: z.string().check(z.minLength(1)) });
const PACKAGE_NAME = 'volume-medic';

/**
 * package.json of volume-medic, looked for upwards from this file: `src/adapters/observability/` in a
 * checkout, `dist/src/adapters/observability/` in the image (whose /app/package.json is copied beside dist/).
 */
function packageVersion(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const parsed = PackageJson.safeParse(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')));
      if (parsed.success && parsed.data.name === PACKAGE_NAME) return parsed.data.version;
    } catch {
      // No package.json here (or not JSON): keep looking upwards.
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

/** A revision is a git commit or tag as the build passed it; anything else is not shown. */
const REVISION = /^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/;

/**
 * VOLUME_MEDIC_REVISION is set in the image at build time (Dockerfile: ARG VOLUME_MEDIC_REVISION,
 * e.g. `docker build --build-arg VOLUME_MEDIC_REVISION=$(git rev-parse HEAD)`); "unknown" when
 * the build did not say, or said something that is not a revision.
 */
export function buildInfo(env: Readonly<Record<string, string | undefined>> = process.env): BuildInfo {
  const revision = env['VOLUME_MEDIC_REVISION']?.trim() ?? '';
  return {
    version: packageVersion(dirname(fileURLToPath(import.meta.url))),
    revision: REVISION.test(revision) ? revision : 'unknown',
    nodeVersion: process.version,
  };
}
