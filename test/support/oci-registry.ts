import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A private OCI registry for tests: Debian's docker-registry (CNCF distribution 2.8) on a free
// loopback port, plain HTTP, no auth, storage in a temporary folder removed on stop. Its own
// configuration file: the package's /etc/docker/registry/config.yml (port 5000, htpasswd) is not
// read. Push with `skopeo copy ... --dest-tls-verify=false` or `helm push ... --plain-http`;
// refer to it as oci://<host>/... (helm) or docker://<host>/... (skopeo).

export const REGISTRY_BINARY = '/usr/bin/docker-registry';

export interface OciRegistry {
  /** 127.0.0.1:<port>, for oci://<host>/<repo> and docker://<host>/<repo>:<tag>. */
  host: string;
  /** Its log so far (errors only). */
  log: () => string;
  stop: () => Promise<void>;
}

/** Why a registry cannot start here, or undefined when it can. */
export function ociRegistryMissing(): string | undefined {
  return spawnSync(REGISTRY_BINARY, ['--version'], { stdio: 'ignore' }).status === 0 ? undefined : `${REGISTRY_BINARY} is missing (Debian: apt-get install docker-registry)`;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  srv.close();
  await once(srv, 'close');
  return port;
}

export async function startOciRegistry(timeoutMs = 20_000): Promise<OciRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'volume-medic-registry-'));
  // A port taken between freePort() and the registry's bind shows as an early exit: try again.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const config = join(dir, 'config.yml');
    writeFileSync(config, [
      'version: 0.1',
      'log:',
      '  level: error',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'storage')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'));
    const child = spawn(REGISTRY_BINARY, ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    const exited = once(child, 'exit');
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    };
    const deadline = Date.now() + timeoutMs;
    while (child.exitCode === null && Date.now() < deadline) {
      const ok = await fetch(`http://127.0.0.1:${port}/v2/`).then((r) => r.status === 200, () => false);
      if (ok) return { host: `127.0.0.1:${port}`, log: () => text, stop };
      await new Promise((r) => setTimeout(r, 100));
    }
    if (child.exitCode !== null && attempt < 3) continue;
    await stop();
    throw new Error(`docker-registry did not answer on 127.0.0.1:${port} within ${timeoutMs} ms:\n${text}`);
  }
}
