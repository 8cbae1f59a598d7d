import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildDist } from '../../../scripts/lib/build-dist.ts';
import { podSpec, rendered, SETS } from '../../support/manifests.ts';
import { uniquePrefix } from '../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../support/trust.ts';

// The image runs `npm run build`'s output with the commands of the chart's templates (Dockerfile). Build it
// here and start every command the manifests name, flags included (the node agent's V8 flags
// would crash a Node that does not know them), against a real Redis: each must come up and say so.

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const STARTED: Record<string, RegExp> = {
  receiver: /"msg":"receiver listening"/,
  'cluster-worker': /"msg":"cluster worker started"/,
  'node-agent': /"msg":"node agent started"/,
};

describe('the deployable build (npm run build) runs every command of the manifests', () => {
  let out: string;
  const commands = new Map<string, string[]>();
  const envOf = new Map<string, Record<string, string>>();

  beforeAll(async () => {
    for (const set of SETS) {
      for (const o of rendered(set)) {
        for (const c of podSpec(o)?.containers ?? []) {
          if (c.command?.[0] !== 'node') continue;
          commands.set(c.name, c.command);
          envOf.set(c.name, Object.fromEntries((c.env ?? []).flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : []))));
        }
      }
    }
    out = await buildDist();
  }, 180_000);
  afterAll(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('names a file the build emits in each node command', () => {
    expect([...commands.keys()].sort()).toEqual([...Object.keys(STARTED), 'secrets', 'uninstall-check'].sort());
    for (const [name, argv] of commands) {
      const script = argv.at(-1)!;
      expect(script, name).toMatch(/^dist\/.*\.m?js$/);
      expect(existsSync(join(out, script)), `${name}: ${script}`).toBe(true);
    }
  });

  it("bundles the node agent (the DaemonSet's command): ASCII only, zod and pino inside, the runbooks and what only a job needs outside its static imports", () => {
    const dir = join(out, 'dist/node-agent');
    const files = readdirSync(dir).filter((f) => f.endsWith('.mjs'));
    // A non-ASCII character makes V8 hold a chunk's source as two bytes per character.
    for (const f of files) expect(/[^\x00-\x7f]/.test(readFileSync(join(dir, f), 'latin1')), f).toBe(false);
    // The static closure of main.mjs: `from"x"` and `import"x"` (a dynamic import is `import(`).
    const chunks = new Set<string>();
    const packages = new Set<string>();
    const visit = (f: string): void => {
      if (chunks.has(f)) return;
      chunks.add(f);
      for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/\bfrom\s*"([^"]+)"|\bimport\s*"([^"]+)"/g)) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('./')) visit(spec.slice(2));
        else packages.add(spec.startsWith('node:') ? 'node:' : spec);
      }
    };
    visit('main.mjs');
    // zod and pino are in the bundle; execa, yaml and the Kubernetes client load when first used.
    expect([...packages].sort()).toEqual(['bullmq', 'cluster-key-slot', 'ioredis', 'node:']);
    const registry = files.filter((f) => readFileSync(join(dir, f), 'utf8').includes('function defaultNodeRegistry('));
    expect(registry).toHaveLength(1);
    expect(chunks.has(registry[0]!), 'the runbooks load with the first job').toBe(false);
    // zod's mini API and the English messages only, in every chunk, the first job's included: the
    // classic API would stay loaded for good (src/core/zod.ts).
    const zodFolders = new Set(
      files.flatMap((f) =>
        (JSON.parse(readFileSync(join(dir, `${f}.map`), 'utf8')) as { sources: string[] }).sources
          .map((s) => /node_modules\/zod\/(v4\/[^/]+)\//.exec(s)?.[1])
          .filter((x) => x !== undefined),
      ),
    );
    expect([...zodFolders].sort()).toEqual(['v4/core', 'v4/locales', 'v4/mini']);
  });

  it.each(Object.keys(STARTED))(
    "starts %s from the build with the manifest's command",
    async (name) => {
      const argv = commands.get(name)!;
      const child = spawn(process.execPath, argv.slice(1), {
        cwd: out,
        env: {
          ...process.env,
          VOLUME_MEDIC_REVISION: 'build-test-rev',
          REDIS_URL: inject('redisUrl'),
          QUEUE_PREFIX: uniquePrefix('build'),
          NODE_NAME: 'build-node',
          VOLUME_MEDIC_TOKEN: 'build-test-token-0123456789',
          PORT: '0',
          LISTEN_ADDRESS: '127.0.0.1',
          STATE_DIR: join(out, 'state'),
          LOG_LEVEL: 'info',
          KUBERNETES_SERVICE_HOST: '',
          SIGNING_KEYS_DIR: TEST_KEYS_DIR,
          KUBECONFIG: '',
          ALLOW_PLAINTEXT_HTTP: 'true',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      try {
        const deadline = Date.now() + 20_000;
        while (!STARTED[name]!.test(text)) {
          if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${name} did not start (exit ${child.exitCode}):\n${text}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        if (name === 'receiver') {
          // The image's package.json (beside dist/) gives the version; the build's revision comes through.
          const url = /"url":"(http:[^"]+)"/.exec(text)?.[1];
          const metrics = await (await fetch(`${url}/metrics`)).text();
          expect(metrics).toContain(`volume_medic_build_info{version="${PACKAGE_VERSION}",commit="build-test-rev",node_version="${process.version}"} 1`);
        }
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
    30_000,
  );

  it("runs the secrets hook Job's command from the build: it reads the manifest's SECRETS_SPEC and, outside a pod, says so and exits 1", async () => {
    const argv = commands.get('secrets')!;
    const child = spawn(process.execPath, argv.slice(1), {
      cwd: out,
      env: { PATH: process.env['PATH'] ?? '', SECRETS_SPEC: envOf.get('secrets')!['SECRETS_SPEC']! },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    const code = await new Promise((r) => child.once('exit', r));
    expect(text).toMatch(/^volume-medic secrets: not in a pod: KUBERNETES_SERVICE_HOST is not set/);
    expect(code).toBe(1);
  }, 30_000);
});
