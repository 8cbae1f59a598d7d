import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmTemplate } from '../../../scripts/deploy/chart.ts';
import { freePort } from '../../../scripts/lib/local-redis.ts';
import { ensureSecrets } from '../../../src/control/secrets/ensure.ts';
import { MemoryObjectStore } from '../../testkit/memory-object-store.ts';
import { uniquePrefix } from '../../support/redis.ts';
import { waitFor } from '../../support/wait.ts';
import { find, podSpec, secretsSpec } from '../../support/manifests.ts';

// The bundled Redis's liveness probe, as the default chart renders it, run against a real
// redis-server started with the chart's own arguments, ACL file and certificate (made by the
// chart's secrets hook code): it passes while Redis is healthy and fails while Redis is stuck in
// a never-ending script that wrote (SCRIPT KILL: UNKILLABLE), which the probe it replaced, a TCP
// connect, and redis-cli's exit status alone both pass. Only what must differ on this machine is
// changed: each mount path points at a temporary directory, and the port is a free loopback one.

type Probe = { exec?: { command: string[] }; tcpSocket?: unknown; timeoutSeconds: number; periodSeconds: number; failureThreshold?: number };
type RedisContainer = {
  args: string[];
  ports: Array<{ containerPort: number }>;
  volumeMounts: Array<{ name: string; mountPath: string }>;
  livenessProbe: Probe;
  readinessProbe: Probe;
  startupProbe: Probe;
};
type Volume = { name: string; secret?: { secretName: string } };

/** What the chart rendered before: a TCP connect, 2 s. */
const OLD_LIVENESS = { tcpSocket: { port: 'redis' }, timeoutSeconds: 2 };
const ADMIN = { user: 'vmtest-admin', password: 'admin-pw-7f3a' };

let dir: string;
let server: ChildProcess | undefined;
let port: number;
let container: RedisContainer;
/** A rendered path inside the pod -> the same file here. */
let local: (path: string) => string;
const connections: Redis[] = [];

/** Runs a probe's command as the kubelet does: passed on exit 0 within timeoutSeconds. */
function runProbe(command: readonly string[], timeoutSeconds: number): Promise<{ passed: boolean; stdout: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      process.kill(-child.pid!, 'SIGKILL'); // the shell and the redis-cli it started
    }, timeoutSeconds * 1000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ passed: code === 0 && !timedOut, stdout: stdout.trim(), timedOut });
    });
  });
}

/** The rendered probe's command with the pod's paths and port made this machine's. */
function localCommand(probe: Probe): string[] {
  const [sh, flag, script] = probe.exec!.command;
  expect([sh, flag]).toEqual(['sh', '-c']);
  // One redis-cli call: it gets this server's port (the pod's is the container port, its default).
  expect(script!.match(/redis-cli /g)).toHaveLength(1);
  expect(container.ports.map((p) => p.containerPort)).toEqual([6379]);
  const pathsMoved = container.volumeMounts.reduce((s, m) => s.replaceAll(`${m.mountPath}/`, `${local(m.mountPath)}/`), script!);
  return ['sh', '-c', pathsMoved.replace('redis-cli ', `redis-cli -p ${port} `)];
}

function tcpConnects(timeoutSeconds: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port, timeout: timeoutSeconds * 1000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

function adminConnection(): Redis {
  const r = new Redis({
    host: '127.0.0.1',
    port,
    username: ADMIN.user,
    password: ADMIN.password,
    tls: { ca: [readFileSync(local('/etc/redis/tls/ca.crt'))] },
    // No INFO ready check: a BUSY server refuses it (AUTH and SCRIPT KILL it takes).
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  r.on('error', () => {});
  connections.push(r);
  return r;
}

describe.skipIf(spawnSync('redis-server', ['--version']).error)("the bundled Redis's liveness probe", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-redis-probe-'));
    const objects = helmTemplate();
    const store = new MemoryObjectStore();
    await ensureSecrets(secretsSpec(objects)!, store);
    const sts = find(objects, 'StatefulSet', 'volume-medic-redis');
    const spec = podSpec(sts)! as unknown as { containers: RedisContainer[]; volumes: Volume[] };
    container = spec.containers[0]!;
    // Each mount: a Secret's keys written as files (the chart's ACL file gets one test-only admin
    // user, to run the script), anything else an empty directory (the data claim).
    const mounts = new Map<string, string>();
    for (const m of container.volumeMounts) {
      const here = join(dir, m.name);
      mkdirSync(here);
      mounts.set(m.mountPath, here);
      const secret = spec.volumes.find((v) => v.name === m.name)?.secret;
      if (secret) for (const [k, v] of Object.entries(store.data('Secret', secret.secretName))) writeFileSync(join(here, k), v);
    }
    appendFileSync(join(mounts.get('/etc/redis/acl')!, 'users.acl'), `user ${ADMIN.user} on >${ADMIN.password} ~* &* +@all\n`);
    local = (path: string) => {
      for (const [mount, here] of mounts) if (path === mount || path.startsWith(`${mount}/`)) return here + path.slice(mount.length);
      return path;
    };
    port = await freePort();
    const args = container.args.map((a, i) => (container.args[i - 1] === '--tls-port' ? String(port) : local(a)));
    expect(args.join(' ')).toContain(`--port 0 --tls-port ${port}`);
    server = spawn('redis-server', [...args, '--bind', '127.0.0.1'], { stdio: 'ignore' });
    await waitFor('the TLS Redis', async () => ((await runProbe(localCommand(container.readinessProbe), 5)).passed ? true : undefined), 20_000);
  });

  afterAll(() => {
    for (const c of connections) c.disconnect();
    server?.kill('SIGKILL'); // the server this file started, by its own handle
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is the PING of the readiness and startup probes, restarting after 3 failures 10 s apart, each given 5 s', () => {
    const { livenessProbe: live, readinessProbe: ready, startupProbe: startup } = container;
    expect(live.exec?.command).toEqual(ready.exec?.command);
    expect(live.exec?.command).toEqual(startup.exec?.command);
    expect(live.tcpSocket).toBeUndefined();
    expect(live.exec!.command[2]).toMatch(/^test "\$\(redis-cli --tls --cacert \/etc\/redis\/tls\/ca\.crt --user healthcheck .* ping\)" = PONG$/);
    expect({ period: live.periodSeconds, timeout: live.timeoutSeconds, failures: live.failureThreshold }).toEqual({ period: 10, timeout: 5, failures: 3 });
  });

  it('passes on a healthy Redis; fails from the start of a never-ending script that wrote, which a TCP connect and redis-cli alone pass', async () => {
    const probe = container.livenessProbe;
    const command = localCommand(probe);
    expect((await runProbe(command, probe.timeoutSeconds)).passed).toBe(true);

    const key = `${uniquePrefix('probe')}:x`;
    const stuck = adminConnection();
    await stuck.connect();
    // Never answers; rejected when the server is killed.
    const script = stuck.eval("redis.call('SET', KEYS[1], '1'); while true do end", 1, key).catch((err: Error) => err.message);
    // Right away: no answer until Redis answers BUSY (after busy-reply-threshold, 5 s): failed either way.
    const first = await runProbe(command, probe.timeoutSeconds);
    expect(first.passed).toBe(false);

    const admin = adminConnection();
    await admin.connect().catch(() => {});
    expect(await admin.call('SCRIPT', 'KILL').catch((err: Error) => err.message)).toMatch(/^UNKILLABLE/);
    const busy = await runProbe(command, probe.timeoutSeconds);
    expect(busy.passed).toBe(false);
    expect(busy.timedOut, 'BUSY is an answer, at once').toBe(false);

    // The controls it replaced pass: redis-cli exits 0 on the BUSY error reply, and a TCP connect
    // (the old tcpSocket probe) succeeds.
    const bare = ['sh', '-c', command[2]!.replace(/^test "\$\((.*)\)" = PONG$/, '$1')];
    expect(bare[2]).toMatch(/^redis-cli .* ping$/);
    const cli = await runProbe(bare, probe.timeoutSeconds);
    expect(cli.stdout).toMatch(/^BUSY /);
    expect(cli.passed).toBe(true);
    expect(await tcpConnects(OLD_LIVENESS.timeoutSeconds)).toBe(true);

    // A BUSY Redis ignores SIGTERM (the kubelet's first signal): only SIGKILL, after the pod's
    // terminationGracePeriodSeconds, ends it.
    const exited = new Promise<void>((r) => server!.once('exit', () => r()));
    server!.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 2_000));
    expect(server!.exitCode).toBeNull();
    expect(server!.signalCode).toBeNull();
    server!.kill('SIGKILL');
    await exited;
    expect(typeof (await script)).toBe('string');
  });
});
