import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultCmd, pinnedNodeVersion } from '../../../../scripts/image/build.ts';

// `npm run image` and the Dockerfile build the same image two ways; what both must agree on.
const dockerfile = readFileSync(new URL('../../../../Dockerfile', import.meta.url), 'utf8');

describe('the image build and the Dockerfile', () => {
  it('run the Node that scripts/with-node pins (and the tests run on)', () => {
    expect(pinnedNodeVersion()).toMatch(/^24\.\d+\.\d+$/);
    expect(/^ARG NODE_IMAGE=node:(\S+)-bookworm-slim$/m.exec(dockerfile)?.[1]).toBe(pinnedNodeVersion());
  });

  it('start the receiver by default, as the chart runs it', () => {
    expect(defaultCmd()).toEqual(['node', '--max-old-space-size=384', '--max-semi-space-size=64', 'dist/src/control/main.js']);
  });

  it('tag the image with the version the chart pulls by default (image.tag empty: appVersion)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string };
    const chart = readFileSync(new URL('../../../../deploy/charts/volume-medic/Chart.yaml', import.meta.url), 'utf8');
    expect(/^appVersion: "?([^"\n]+)"?$/m.exec(chart)?.[1]).toBe(pkg.version);
  });

  it('run as user 65532 by default', () => {
    expect(dockerfile).toMatch(/^USER 65532:65532$/m);
  });
});

describe("the Dockerfile's build context", () => {
  // .dockerignore excludes everything (`*`) and then admits paths one by one: a COPY of a path it
  // does not admit fails the build ("not found"), which no test here can run (no container engine).
  const admitted = readFileSync(new URL('../../../../.dockerignore', import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('!'))
    .map((l) => l.slice(1).replace(/\/$/, ''));
  const copied = [...dockerfile.matchAll(/^COPY (?!--from=)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));

  it('admits every path a COPY line takes from it', () => {
    expect(copied).toContain('scripts/lib/bundle-node-agent.ts');
    for (const path of copied)
      expect(
        admitted.some((a) => path === a || path.startsWith(`${a}/`)),
        path,
      ).toBe(true);
  });
});
