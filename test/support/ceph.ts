import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseListWatchers } from '../../workers/runbooks/rbd-stale-mapping/watchers.ts';
import { setTimeout as sleep } from 'node:timers/promises';

// A throwaway one-node Ceph cluster for the integration tier (LAB-NOTES, "Ceph"): one monitor,
// one memstore OSD, auth none, pool size 1, everything in a temporary folder, daemons in the
// foreground as our children so teardown kills exactly them. Ready in about 7 s on 2 cores.
// Needs Debian's ceph-mon, ceph-osd and ceph-common; cephUnavailable() says why it cannot run.

const run = promisify(execFile);
const BINARIES = ['/usr/bin/ceph-mon', '/usr/bin/ceph-osd', '/usr/bin/ceph', '/usr/bin/rbd', '/usr/bin/rados', '/usr/bin/monmaptool', '/usr/bin/ceph-authtool'];

export function cephUnavailable(): string | undefined {
  const missing = BINARIES.filter((b) => !existsSync(b));
  if (missing.length > 0) {
    return `Ceph is not installed (missing ${missing.join(', ')}): apt-get install --no-install-recommends ceph-mon ceph-osd ceph-common`;
  }
  return undefined;
}

export interface TestCeph {
  dir: string;
  conf: string;
  /** The monitor's `mon host` value (for a client elsewhere, e.g. the lab guest). */
  monHost: string;
  /** Runs a Ceph tool against this cluster; rejects on a non-zero exit. */
  cli(file: 'ceph' | 'rbd' | 'rados', args: string[], timeoutMs?: number): Promise<{ stdout: string; stderr: string }>;
  /** The watcher addresses of pool/image: `rbd info` -> its header object -> `rados listwatchers`. */
  watchers(pool: string, image: string): Promise<string[]>;
  /** Holds a watch on pool/image from a separate client process until stopped (stdin kept open). */
  watch(pool: string, image: string): Promise<{ child: ChildProcess; stop(): Promise<void> }>;
  stop(): Promise<void>;
}

async function freePort(address = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, address, () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
    }, 3000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface StartCephOptions {
  /**
   * The IPv4 address the monitor and the OSD bind to and advertise; default 127.0.0.1. The lab
   * tier passes an address of its own veth link so a guest kernel can reach the cluster.
   */
  address?: string;
  /** Also give the monitor a msgr v1 address (the kernel client's default `ms_mode=legacy`). */
  msgrV1?: boolean;
}

/** The `mon host` value for this cluster's monitor (v2, and v1 when asked for). */
const monHost = (address: string, v2Port: number, v1Port?: number): string =>
  v1Port === undefined ? `v2:${address}:${v2Port}` : `[v2:${address}:${v2Port},v1:${address}:${v1Port}]`;

export async function startCeph(opts: StartCephOptions = {}): Promise<TestCeph> {
  const address = opts.address ?? '127.0.0.1';
  const dir = await mkdtemp(join(tmpdir(), 'vm-ceph-'));
  const conf = join(dir, 'ceph.conf');
  const children: ChildProcess[] = [];
  const fsid = randomUUID();
  const port = await freePort(address);
  const v1Port = opts.msgrV1 ? await freePort(address) : undefined;
  await Promise.all(['run', 'log', 'mon', 'osd/ceph-0'].map((d) => mkdir(join(dir, d), { recursive: true })));
  await writeFile(
    conf,
    [
      '[global]',
      `fsid = ${fsid}`,
      `mon host = ${monHost(address, port, v1Port)}`,
      `public addr = ${address}`,
      'auth cluster required = none',
      'auth service required = none',
      'auth client required = none',
      'osd pool default size = 1',
      'osd pool default min size = 1',
      'mon allow pool size one = true',
      'mon warn on pool no redundancy = false',
      'osd objectstore = memstore',
      'memstore device bytes = 268435456',
      'osd crush chooseleaf type = 0',
      'ms bind ipv6 = false',
      `run dir = ${dir}/run`,
      `admin socket = ${dir}/run/$cluster-$name.$pid.asok`,
      `log file = ${dir}/log/$name.log`,
      `mon data = ${dir}/mon/$cluster-$id`,
      `osd data = ${dir}/osd/$cluster-$id`,
      `keyring = ${dir}/keyring`,
      // A dead monitor must fail commands fast instead of hanging them for minutes.
      'client mount timeout = 15',
      'rados mon op timeout = 15',
      'rados osd op timeout = 15',
      '',
    ].join('\n'),
  );

  const cli: TestCeph['cli'] = async (file, args, timeoutMs = 30_000) => run(file, ['--conf', conf, ...args], { timeout: timeoutMs, killSignal: 'SIGKILL' });
  const daemon = (file: string, args: string[]): ChildProcess => {
    const child = spawn(file, ['-f', '--conf', conf, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.resume();
    children.push(child);
    return child;
  };
  const stop = async (): Promise<void> => {
    await Promise.all(children.reverse().map(kill));
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await run('ceph-authtool', ['--create-keyring', join(dir, 'keyring'), '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *']);
    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[${monHost(address, port, v1Port).replace(/^\[|\]$/g, '')}]`, join(dir, 'monmap')]);
    await run('ceph-mon', ['--conf', conf, '--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap'), '--keyring', join(dir, 'keyring')]);
    daemon('ceph-mon', ['-i', 'a']);
    await cli('ceph', ['osd', 'create']);
    await run('ceph-osd', ['--conf', conf, '-i', '0', '--mkfs', '--osd-uuid', randomUUID()]);
    await cli('ceph', ['osd', 'crush', 'add', 'osd.0', '1', 'host=localhost', 'root=default']);
    daemon('ceph-osd', ['-i', '0']);
    // Without ceph-mgr, `ceph pg stat` blocks: a write is the readiness check (LAB-NOTES).
    await cli('ceph', ['osd', 'pool', 'create', 'vmprobe', '8']);
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await cli('rados', ['-p', 'vmprobe', 'put', 'probe', conf], 20_000);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(300);
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    dir,
    conf,
    monHost: monHost(address, port, v1Port),
    cli,
    async watchers(pool, image) {
      const info = JSON.parse((await cli('rbd', ['info', '--format', 'json', `${pool}/${image}`])).stdout) as { block_name_prefix: string };
      const header = `rbd_header.${info.block_name_prefix.slice('rbd_data.'.length)}`;
      return parseListWatchers((await cli('rados', ['-p', pool, 'listwatchers', header])).stdout).watchers.map((w) => w.address);
    },
    async watch(pool, image) {
      // `rbd watch` exits when stdin closes: keep a pipe open and never end it.
      const child = spawn('rbd', ['--conf', conf, 'watch', `${pool}/${image}`], { stdio: ['pipe', 'pipe', 'pipe'] });
      children.push(child);
      let out = '';
      child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
      const deadline = Date.now() + 20_000;
      while (!out.includes('press enter to exit')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`rbd watch did not start: ${out}`);
        await sleep(50);
      }
      // Closing stdin makes it unwatch and exit; a killed client's watch would linger until the
      // OSD times it out (30 s), and the next test would see it.
      const stop = async (): Promise<void> => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.stdin?.end();
        await Promise.race([exited, sleep(5_000)]);
        await kill(child);
      };
      return { child, stop };
    },
    stop,
  };
}
