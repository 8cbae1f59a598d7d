// `npm run signing-keys -- <dir> [key id]`: new signing keys for every role (receiver,
// cluster-worker, node-agent) in <dir>, and the kubectl commands that make them Secrets.
// Existing files are never overwritten. See docs/signed-work.md.
import { ROLES } from '../src/core/trust/roles.ts';
import { writeSigningKeys } from './lib/signing-keys.ts';

const [dir, kid] = process.argv.slice(2);
if (!dir || process.argv.includes('--help')) {
  process.stderr.write("usage: npm run signing-keys -- <dir> [key id, default today's date]\n");
  process.exit(dir ? 0 : 2);
}
const id = kid ?? new Date().toISOString().slice(0, 10);
try {
  writeSigningKeys(dir, ROLES, id);
} catch (err) {
  process.stderr.write(
    `signing-keys: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? `a key with id ${id} already exists in ${dir}` : (err as Error).message}\n`,
  );
  process.exit(1);
}
process.stdout.write(
  `wrote ${ROLES.map((r) => `${dir}/${r}.${id}`).join(', ')}\n\nOne Secret per role (each component mounts only the keys it needs, deploy/README.md):\n`,
);
for (const r of ROLES)
  process.stdout.write(`  kubectl -n volume-medic create secret generic volume-medic-signing-${r} --from-file=${r}.${id}=${dir}/${r}.${id}\n`);
