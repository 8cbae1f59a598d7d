import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A CA and a server certificate for localhost in `dir` (openssl), or undefined without openssl. */
export function redisTlsFiles(dir: string): { ca: string; cert: string; key: string } | undefined {
  if (spawnSync('openssl', ['version']).error) return undefined;
  const f = (n: string): string => join(dir, n);
  const run = (args: string[]): void => {
    const r = spawnSync('openssl', args, { stdio: 'pipe', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr.toString()}`);
  };
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=vmtest-ca', '-keyout', f('ca.key'), '-out', f('ca.pem')]);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', f('redis.key'), '-out', f('redis.csr')]);
  writeFileSync(f('ext.cnf'), 'subjectAltName=DNS:localhost\n');
  run([
    'x509',
    '-req',
    '-in',
    f('redis.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    f('ext.cnf'),
    '-out',
    f('redis.pem'),
  ]);
  return { ca: f('ca.pem'), cert: f('redis.pem'), key: f('redis.key') };
}
