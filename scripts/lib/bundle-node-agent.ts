import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

// The node agent as deployed: one ES module bundle of its own code, zod's mini API and pino
// (dist/node-agent/main.mjs and the chunks it imports), instead of the ~125 compiled modules of
// dist/src. It runs on every node and its idle RSS is budgeted against a bare BullMQ Worker
// (issue 33; bench/README.md, "The agent against its floor"): a module costs V8 a record, a
// source string and scope data of its own (a CommonJS one also a wrapper, a Module and its lookup
// paths), and zod's entry points load its 64 locale modules, which the bundle's tree shaking
// leaves out.
//
// What holds:
// - zod and pino are bundled, each with what it requires (pino's sonic-boom, serializers,
//   redaction...). pino's transports would look for their worker files beside the bundle: the
//   agent logs to stdout and starts none.
// - Every other package stays an external import, loaded from node_modules as before: BullMQ and
//   ioredis are the floor's own; execa, yaml and the Kubernetes client load on first use.
// - Dynamic imports stay dynamic (the runbooks' registry is a chunk of its own, loaded with the
//   first job): the code split follows the source's `import()`s.
// - Whitespace only is removed: names stay, so a stack trace names the functions it passes
//   through, and no compressor rewrites the code (measured: compression and mangling save
//   nothing over this). Source maps beside the chunks turn a trace's line:column back into
//   workers/ and src/ when the agent runs with --enable-source-maps.
// - ASCII output: one non-Latin-1 character (an en dash in a library's message) makes V8 hold a
//   whole chunk's source as two-byte characters, twice its size.

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const NODE_AGENT_ENTRY = join(REPO, 'workers/node-agent/main.ts');

const BUNDLED = /^(zod|pino)(\/|$)/;
const isBare = (id: string): boolean => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0');
/** A bundled package brings the packages it requires: only BUNDLED ones are entered from our code. */
const inPackage = (importer: string | undefined): boolean => importer?.includes('/node_modules/') === true;

/** Writes the bundle into `outDir` (emptied first); returns its entry file, `<outDir>/main.mjs`. */
export async function bundleNodeAgent(outDir: string): Promise<string> {
  rmSync(outDir, { recursive: true, force: true });
  await build({
    input: NODE_AGENT_ENTRY,
    platform: 'node',
    cwd: REPO,
    external: (id, importer) => id.startsWith('node:') || (isBare(id) && !BUNDLED.test(id) && !inPackage(importer)),
    logLevel: 'warn',
    output: {
      dir: outDir,
      format: 'esm',
      entryFileNames: 'main.mjs',
      chunkFileNames: '[name]-[hash].mjs',
      charset: 'ascii',
      // For reading a stack trace: Node applies them only when asked (--enable-source-maps).
      sourcemap: true,
      // Sources named from the repository's root (workers/..., src/...), wherever the bundle is
      // written: the image's build writes it under a temporary folder, and its digest must not
      // depend on that.
      sourcemapPathTransform: (source, map) => relative(REPO, resolve(dirname(map), source)),
      minify: { mangle: false, compress: false, codegen: { removeWhitespace: true } },
    },
  });
  for (const f of readdirSync(outDir).filter((n) => n.endsWith('.mjs'))) {
    // charset 'ascii' escapes "where possible"; anything it leaves would double a chunk in memory.
    if (/[^\x00-\x7f]/.test(readFileSync(join(outDir, f), 'latin1'))) throw new Error(`bundle-node-agent: ${f} holds non-ASCII characters`);
  }
  return join(outDir, 'main.mjs');
}

// `node scripts/lib/bundle-node-agent.ts <outDir>`: npm run build's last step.
if (import.meta.main) {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write('usage: node scripts/lib/bundle-node-agent.ts <outDir>\n');
    process.exit(2);
  }
  process.stdout.write(`${await bundleNodeAgent(out)}\n`);
}
