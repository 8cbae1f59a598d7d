import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** An ECDSA P-256 control key and its self-signed certificate (openssl), as the chart makes them. */
export function writeControlKeys(): { keyFile: string; certFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'vm-control-keys-'));
  const keyFile = join(dir, 'control.key');
  const certFile = join(dir, 'control.crt');
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=volume-medic-controls',
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  if (r.status !== 0) throw new Error(`openssl: ${r.stderr}`);
  return { keyFile, certFile };
}
