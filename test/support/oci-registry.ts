import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../scripts/lib/local-redis.ts';

// A private OCI registry for tests: Debian's `docker-registry` (the CNCF distribution registry;
// .ci/run installs it) on a random loopback port, plain HTTP, with its own config file and
// storage directory, as a process of its own that stop() kills by its PID. Helm pushes charts to
// it (`helm push ... oci://<host>/charts --plain-http`); skopeo can copy images into it
// (`skopeo copy --dest-tls-verify=false ... docker://<host>/<name>:<tag>`).
//
//   const reg = await startOciRegistry();   // or undefined from registryUnavailable()
//   ... oci://${reg.host}/charts ...
//   await reg.stop();

const REGISTRY_BINARY = process.env['VOLUME_MEDIC_DOCKER_REGISTRY'] || '/usr/bin/docker-registry';

/** Why a registry cannot start here, or undefined when it can. */
export function registryUnavailable(): string | undefined {
  return existsSync(REGISTRY_BINARY) ? undefined : `${REGISTRY_BINARY} is not installed (Debian package docker-registry; .ci/run installs it)`;
}

export interface OciRegistry {
  /** 127.0.0.1:<port>, for oci://<host>/... and docker://<host>/... references. */
  host: string;
  port: number;
  /** http://127.0.0.1:<port>, the registry API (/v2/...). */
  url: string;
  /** Its config file and storage directory live under this. */
  dir: string;
  /** The registry's own log so far (warnings and errors). */
  log(): string;
  /** Kills the registry (by PID) and removes its directory. */
  stop(): Promise<void>;
}

const get = (
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { headers, timeout: 2_000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer`)));
    req.on('error', reject);
    req.end();
  });

/** GET on the registry API (e.g. a manifest, to read its Docker-Content-Digest). */
export const registryGet = get;

function configText(dir: string, port: number): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '',
  ].join('\n');
}

export async function startOciRegistry(): Promise<OciRegistry> {
  const why = registryUnavailable();
  if (why) throw new Error(why);
  const dir = mkdtempSync(join(tmpdir(), 'vm-oci-registry-'));
  mkdirSync(join(dir, 'data'));
  let lastError = '';
  // A free port can be taken between freePort() and the registry's bind: try a few.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const config = join(dir, 'config.yml');
    writeFileSync(config, configText(dir, port));
    const proc: ChildProcess = spawn(REGISTRY_BINARY, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    proc.stderr!.on('data', (c: Buffer) => {
      log += c.toString();
    });
    proc.on('error', (err) => {
      log += `${err.message}\n`;
    });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && proc.exitCode === null) {
      const ok = await get(`${url}/v2/`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) {
        return {
          host: `127.0.0.1:${port}`,
          port,
          url,
          dir,
          log: () => log,
          async stop() {
            if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
              process.kill(proc.pid, 'SIGTERM');
              const killed = await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)]);
              if (!killed && proc.pid !== undefined) process.kill(proc.pid, 'SIGKILL');
              await exited;
            }
            rmSync(dir, { recursive: true, force: true });
          },
        };
      }
      await sleep(100);
    }
    if (proc.exitCode === null && proc.pid !== undefined) process.kill(proc.pid, 'SIGKILL');
    await exited;
    lastError = log.trim() || `exited with ${proc.exitCode}`;
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`docker-registry did not start: ${lastError.slice(-2000)}`);
}
