// A real Linux guest (Debian 12's kernel under qemu) that lab tests boot and drive.
//
// Command channel: a virtio-serial port ("vm.cmd") on a unix socket, spoken to by
// scripts/lab/guest/vm-agent.py in JSON lines. Chosen over ssh-through-hostfwd because it needs
// no network, no sshd or keys in the image, answers in tens of milliseconds instead of ~1 s
// (a TCG guest pays for every ssh handshake), and, unlike a second *serial* port, it is not a
// tty: no echo, no CR/LF, no 4 KiB line limit. Exit codes and stdout/stderr come back framed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ensureLabImage, type LabImage } from './image.ts';
import { setTimeout as sleep } from 'node:timers/promises';

export interface BootLabVmOptions {
  /** The image to boot; default: ensureLabImage() (builds it on first use, minutes). */
  image?: LabImage;
  /** From spawning qemu to the agent's "ready"; default 180 s (TCG boots in ~15 s when the machine is idle). */
  bootTimeoutMs?: number;
  /** Guest /etc/multipath.conf user_friendly_names; default true (maps named mpatha...). */
  userFriendlyNames?: boolean;
  /** Start multipathd at boot; default true. */
  startMultipathd?: boolean;
  /** Guest memory; default 512 MiB. The machine is shared: keep it small. */
  memoryMiB?: number;
  /** Guest vCPUs; default 2. */
  cpus?: number;
  /** Progress lines (image build, boot). */
  log?: (line: string) => void;
  /**
   * A virtio NIC on qemu user-mode networking (slirp), configured by the guest's init as
   * 10.0.2.15/24 via 10.0.2.2: the guest reaches addresses of this machine (see lab-link.ts),
   * nothing listens for it. Default: no NIC at all.
   */
  userNetwork?: boolean;
  /**
   * A persistent root disk (createGuestDisk): a qcow2 overlay over the image's root file system,
   * booted instead of `-snapshot`, so what the guest wrote (iSCSI node records, /etc/ceph, the
   * agent's state directory) is there again when a later boot passes the same disk: a reboot
   * with a new boot id. The cached image still never changes. Default: none (`-snapshot`).
   */
  disk?: GuestDisk;
}

/** A root disk that outlives one boot; remove() deletes the overlay. */
export interface GuestDisk {
  path: string;
  remove(): void;
}

/** A qcow2 overlay backed by the image's root file system (read-only for qemu). */
export function createGuestDisk(image: LabImage): GuestDisk {
  const dir = mkdtempSync(join(tmpdir(), 'volume-medic-lab-disk-'));
  const path = join(dir, 'root.qcow2');
  const r = spawnSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', image.rootfs, '-F', 'raw', path], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`qemu-img create failed: ${r.stderr ?? r.error}`);
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface RunOptions {
  /** Enforced in the guest (process group SIGKILLed); default 60 s. */
  timeoutMs?: number;
  /** Written to the command's stdin; default: /dev/null. */
  stdin?: string;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  /** Exit code; null when killed by a signal or timed out. */
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Processes of a timed-out command that outlived SIGKILL (D state on queued I/O). */
  stuckPids: number[];
  /** Round trip seen by the host. */
  durationMs: number;
}

export interface LabVm {
  /** argv runs without a shell; a string runs with `bash -c`. Never rejects on a non-zero exit. */
  run(cmd: readonly string[] | string, opts?: RunOptions): Promise<RunResult>;
  /** Like run, but rejects unless the exit code is 0. */
  runOk(cmd: readonly string[] | string, opts?: RunOptions): Promise<RunResult>;
  /** Powers the guest off and always ends qemu (SIGKILL after a grace period). Idempotent. */
  shutdown(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  /** qemu spawn -> agent ready, as seen by the host. */
  readonly bootMs: number;
  /** Guest /proc/uptime when the agent was ready. */
  readonly guestUptimeAtReady: number;
  readonly kernelRelease: string;
  readonly image: LabImage;
  /** Serial console so far (kernel + init messages); useful in failure messages. */
  consoleLog(): string;
}

const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
function stripAnsi(s: string): string {
  return s.replace(ANSI, '');
}

const readySchema = z.object({ event: z.literal('ready'), uptime: z.number(), kernel: z.string() });
const replySchema = z.object({
  id: z.number(),
  code: z.number().nullable().optional(),
  signal: z.string().nullable().optional(),
  timedOut: z.boolean().optional(),
  stuckPids: z.array(z.number()).optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  event: z.string().optional(),
  message: z.string().optional(),
});

// Every qemu this process started; killed on exit even if a test forgot shutdown().
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const q of live) q.kill('SIGKILL');
});

const hasSetpriv = spawnSync('sh', ['-c', 'command -v setpriv'], { stdio: 'ignore' }).status === 0;

export async function bootLabVm(opts: BootLabVmOptions = {}): Promise<LabVm> {
  const log = opts.log ?? (() => {});
  const image = opts.image ?? (await ensureLabImage(log));
  const bootTimeoutMs = opts.bootTimeoutMs ?? 180_000;
  const dir = mkdtempSync(join(tmpdir(), 'volume-medic-lab-'));
  const sock = join(dir, 'cmd.sock');
  const consolePath = join(dir, 'console.log');
  const append = [
    'console=ttyS0',
    'panic=-1', // with -no-reboot, a guest panic ends qemu at once instead of hanging the test
    'quiet',
    'loglevel=4',
    // A throw-away guest under TCG: speculative-execution mitigations only cost emulated cycles.
    'mitigations=off',
    `vm.ufn=${opts.userFriendlyNames === false ? 0 : 1}`,
    `vm.multipathd=${opts.startMultipathd === false ? 0 : 1}`,
    `vm.net=${opts.userNetwork ? 1 : 0}`,
  ].join(' ');
  const qemuArgs = [
    '-name',
    'volume-medic-lab',
    '-accel',
    'tcg,tb-size=256',
    '-cpu',
    'max',
    '-smp',
    String(opts.cpus ?? 2),
    '-m',
    String(opts.memoryMiB ?? 512),
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-no-reboot',
    '-kernel',
    image.kernel,
    '-initrd',
    image.initrd,
    '-append',
    append,
    // -snapshot: writes go to a temporary overlay; the cached image never changes. A persistent
    // disk is an overlay of its own; cache=writeback there, so a host-side crash cannot lose
    // what a guest that synced believes is on disk between its boots.
    ...(opts.disk
      ? ['-drive', `file=${opts.disk.path},format=qcow2,if=virtio,cache=writeback`]
      : ['-snapshot', '-drive', `file=${image.rootfs},format=raw,if=virtio,cache=unsafe`]),
    '-serial',
    `file:${consolePath}`,
    '-device',
    'virtio-serial-pci',
    // wait=on: qemu does not start the guest until we are connected, so no output is lost.
    '-chardev',
    `socket,id=cmd,path=${sock},server=on,wait=on`,
    '-device',
    'virtserialport,chardev=cmd,name=vm.cmd',
    // restrict=on would cut the guest off from the host's addresses, which is the point of it here.
    ...(opts.userNetwork ? ['-nic', 'user,model=virtio-net-pci'] : ['-nic', 'none']),
  ];
  // --pdeathsig: the kernel kills qemu if this process dies without running its exit handlers.
  const [bin, args] = hasSetpriv ? ['setpriv', ['--pdeathsig', 'KILL', '--', 'qemu-system-x86_64', ...qemuArgs]] : ['qemu-system-x86_64', qemuArgs];
  const started = performance.now();
  log(`[lab-vm] qemu ${qemuArgs.join(' ')}`);
  const qemu = spawn(bin, args as string[], { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(qemu);
  let qemuStderr = '';
  qemu.stderr?.setEncoding('utf8').on('data', (d: string) => (qemuStderr = (qemuStderr + d).slice(-4000)));
  let exited: { code: number | null; signal: string | null } | null = null;
  const exitPromise = new Promise<void>((resolve) => {
    qemu.on('exit', (code, signal) => {
      exited = { code, signal };
      live.delete(qemu);
      resolve();
    });
    qemu.on('error', (err) => {
      qemuStderr += String(err);
      exited = { code: null, signal: null };
      live.delete(qemu);
      resolve();
    });
  });

  let consoleAtExit: string | undefined;
  const consoleLog = () => {
    if (consoleAtExit !== undefined) return consoleAtExit;
    try {
      return readFileSync(consolePath, 'utf8');
    } catch {
      return '';
    }
  };
  const why = (what: string) => new Error(`${what}\n--- qemu stderr ---\n${qemuStderr.trim()}\n--- guest console (tail) ---\n${consoleLog().slice(-3000)}`);

  let socket: Socket | undefined;
  let shutdownPromise: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      if (!exited && socket && !socket.destroyed) socket.write(`${JSON.stringify({ op: 'poweroff' })}\n`);
      const graceful = await Promise.race([exitPromise.then(() => true), sleep(5_000).then(() => false)]);
      if (!graceful) {
        qemu.kill('SIGKILL');
        await exitPromise;
      }
      socket?.destroy();
      for (const p of pending.values()) p.reject(new Error('lab VM shut down while a command was running'));
      pending.clear();
      consoleAtExit = consoleLog();
      rmSync(dir, { recursive: true, force: true });
    })();
    return shutdownPromise;
  };

  type Pending = { resolve: (r: z.infer<typeof replySchema>) => void; reject: (e: Error) => void };
  const pending = new Map<number, Pending>();
  let onReady: ((r: z.infer<typeof readySchema>) => void) | undefined;

  try {
    // The socket appears as soon as qemu parsed its arguments.
    const deadline = Date.now() + 15_000;
    while (!socket) {
      if (exited) throw why(`qemu exited before listening (${JSON.stringify(exited)})`);
      if (Date.now() > deadline) throw why('qemu did not create its command socket within 15 s');
      if (existsSync(sock)) {
        socket = await new Promise<Socket | undefined>((resolve) => {
          const s = connect(sock);
          s.once('connect', () => resolve(s));
          s.once('error', () => resolve(undefined));
        });
      }
      if (!socket) await sleep(50);
    }
    let buf = '';
    socket.setEncoding('utf8');
    socket.on('error', () => {});
    socket.on('data', (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        let msg: unknown;
        try {
          msg = JSON.parse(line);
        } catch {
          log(`[lab-vm] unframed guest output: ${line.slice(0, 200)}`);
          continue;
        }
        const ready = readySchema.safeParse(msg);
        if (ready.success) {
          onReady?.(ready.data);
          continue;
        }
        const reply = replySchema.safeParse(msg);
        if (reply.success) {
          pending.get(reply.data.id)?.resolve(reply.data);
          pending.delete(reply.data.id);
        } else log(`[lab-vm] unexpected guest message: ${line.slice(0, 200)}`);
      }
    });
    socket.on('close', () => {
      for (const p of pending.values()) p.reject(why('the command channel closed (guest powered off or crashed)'));
      pending.clear();
    });

    const ready = await new Promise<z.infer<typeof readySchema>>((resolve, reject) => {
      const timer = setTimeout(() => reject(why(`guest not ready within ${bootTimeoutMs} ms`)), bootTimeoutMs);
      onReady = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
      void exitPromise.then(() => {
        clearTimeout(timer);
        reject(why(`qemu exited during boot (${JSON.stringify(exited)})`));
      });
    });
    const bootMs = Math.round(performance.now() - started);
    log(`[lab-vm] ready in ${bootMs} ms (guest uptime ${ready.uptime.toFixed(1)} s, kernel ${ready.kernel})`);

    let nextId = 1;
    const run = async (cmd: readonly string[] | string, runOpts: RunOptions = {}): Promise<RunResult> => {
      if (exited || shutdownPromise) throw why('lab VM is not running');
      const id = nextId++;
      const timeoutMs = runOpts.timeoutMs ?? 60_000;
      const req = {
        id,
        op: 'run',
        ...(typeof cmd === 'string' ? { script: cmd } : { argv: [...cmd] }),
        ...(runOpts.stdin !== undefined ? { stdin: runOpts.stdin } : {}),
        timeoutMs,
      };
      const t0 = performance.now();
      const reply = await new Promise<z.infer<typeof replySchema>>((resolve, reject) => {
        // The guest enforces timeoutMs; this is for a guest that stopped answering altogether.
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(why(`no answer from the guest ${timeoutMs + 15_000} ms after: ${JSON.stringify(cmd)}`));
        }, timeoutMs + 15_000);
        pending.set(id, {
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
        socket!.write(`${JSON.stringify(req)}\n`);
      });
      if (reply.event === 'error') throw new Error(`guest agent: ${reply.message ?? 'error'}`);
      const decode = (b64: string | undefined) => stripAnsi(Buffer.from(b64 ?? '', 'base64').toString('utf8'));
      return {
        stdout: decode(reply.stdout),
        stderr: decode(reply.stderr),
        code: reply.code ?? null,
        signal: reply.signal ?? null,
        timedOut: reply.timedOut ?? false,
        stuckPids: reply.stuckPids ?? [],
        durationMs: Math.round(performance.now() - t0),
      };
    };
    const runOk = async (cmd: readonly string[] | string, runOpts?: RunOptions): Promise<RunResult> => {
      const r = await run(cmd, runOpts);
      if (r.code !== 0) {
        throw new Error(
          `guest command failed (code ${r.code}${r.signal ? `, signal ${r.signal}` : ''}${r.timedOut ? ', timed out' : ''}): ` +
            `${typeof cmd === 'string' ? cmd : cmd.join(' ')}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`,
        );
      }
      return r;
    };

    return {
      run,
      runOk,
      shutdown,
      [Symbol.asyncDispose]: shutdown,
      bootMs,
      guestUptimeAtReady: ready.uptime,
      kernelRelease: ready.kernel,
      image,
      consoleLog,
    };
  } catch (err) {
    await shutdown();
    throw err;
  }
}
