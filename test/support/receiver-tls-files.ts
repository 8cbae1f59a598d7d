import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A CA and the receiver's certificate it signs for 127.0.0.1 (ECDSA P-256, as the chart makes
// them; test/int/control/receiver/receiver-tls.int.test.ts does the same with its own names), in
// `dir`: bench/fleet-paths.ts and test/int/control/http/breaker-asks-connection.int.test.ts.

export function receiverTlsFiles(dir: string): { ca: string; cert: string; key: string } {
  const f = (n: string): string => join(dir, n);
  const run = (args: string[]): void => {
    const r = spawnSync('openssl', args, { stdio: 'pipe', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr?.toString() ?? r.error?.message}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run(['req', '-x509', ...ec, '-days', '2', '-subj', '/CN=bench-ca', '-keyout', f('ca.key'), '-out', f('ca.crt')]);
  run(['req', ...ec, '-subj', '/CN=volume-medic', '-keyout', f('receiver.key'), '-out', f('receiver.csr')]);
  writeFileSync(f('receiver.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run([
    'x509',
    '-req',
    '-in',
    f('receiver.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    f('receiver.ext'),
    '-out',
    f('receiver.crt'),
  ]);
  return { ca: f('ca.crt'), cert: f('receiver.crt'), key: f('receiver.key') };
}
