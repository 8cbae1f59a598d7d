import { lstat, mkdir, readdir, readFile, readlink, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import type { FileInfo, FileType, Host, RunOptions } from './host.ts';
import { assertHostPath, underRoot } from './paths.ts';
import { runCommand } from './run-command.ts';

export interface RealHostOptions {
  /** Where the host's / is visible to the agent. Default `/`. */
  root?: string;
  /**
   * Run commands in the host's mount and network namespaces (`nsenter -t 1 -m -n --`), for an
   * agent in a container. Requires hostPID and privilege. The network namespace matters:
   * multipathd and iscsid listen on abstract unix sockets, which belong to a network namespace,
   * so `multipath`/`iscsiadm` run in the pod's own would not reach the host's daemons.
   * Default false.
   */
  nsenter?: boolean;
  /** Default deadline of a command. Default 30 s. */
  timeoutMs?: number;
  /** Grace between SIGTERM and SIGKILL of a timed-out group. Default 2 s. */
  killGraceMs?: number;
  /** Bytes of stdout and of stderr kept per command. Default 64 KiB. */
  maxOutputBytes?: number;
}

const NSENTER = ['nsenter', '-t', '1', '-m', '-n', '--'] as const;

const isMissing = (err: unknown): boolean => {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
};

function typeOf(s: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean; isBlockDevice(): boolean; isCharacterDevice(): boolean }): FileType {
  if (s.isSymbolicLink()) return 'symlink';
  if (s.isBlockDevice()) return 'block';
  if (s.isCharacterDevice()) return 'char';
  if (s.isDirectory()) return 'dir';
  return s.isFile() ? 'file' : 'other';
}

/** glibc's major()/minor() on a 64-bit dev_t. */
function splitDev(rdev: bigint): { major: number; minor: number } {
  return {
    major: Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn)),
    minor: Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn)),
  };
}

export function createRealHost(options: RealHostOptions = {}): Host {
  const root = options.root ?? '/';
  assertHostPath(root);
  const nsenter = options.nsenter ?? false;
  const limits = {
    timeoutMs: options.timeoutMs ?? 30_000,
    killGraceMs: options.killGraceMs ?? 2_000,
    maxOutputBytes: options.maxOutputBytes ?? 64 * 1024,
  };
  const at = (p: string): string => underRoot(root, p);

  return {
    run(argv: readonly string[], runOptions?: RunOptions): Promise<CommandRecord> {
      const full = nsenter ? [...NSENTER, ...argv] : argv;
      return runCommand(full, { ...limits, timeoutMs: runOptions?.timeoutMs ?? limits.timeoutMs });
    },
    argPath: (p) => (nsenter ? assertHostPath(p) : at(p)),
    async readFile(p) {
      try {
        return await readFile(at(p), 'utf8');
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    },
    async writeFile(p, data) {
      await writeFile(at(p), data);
    },
    async writeSysfs(p, value) {
      // 'r+' never creates: a typo in an attribute name fails instead of leaving a stray file.
      await writeFile(at(p), value, { flag: 'r+' });
    },
    async symlink(target, p) {
      await symlink(target, at(p));
    },
    async readlink(p) {
      try {
        return await readlink(at(p));
      } catch (err) {
        if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'EINVAL') return null;
        throw err;
      }
    },
    async lstat(p) {
      try {
        const s = await lstat(at(p), { bigint: true });
        const type = typeOf(s);
        const info: FileInfo = { type, size: Number(s.size) };
        return type === 'block' || type === 'char' ? { ...info, ...splitDev(s.rdev) } : info;
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    },
    async list(dir) {
      try {
        return (await readdir(at(dir))).sort();
      } catch (err) {
        if (isMissing(err)) return [];
        throw err;
      }
    },
    async rename(from, to) {
      await rename(at(from), at(to));
    },
    async unlink(p) {
      try {
        await unlink(at(p));
        return true;
      } catch (err) {
        if (isMissing(err)) return false;
        throw err;
      }
    },
    async mkdir(p) {
      await mkdir(at(p), { recursive: true });
    },
  };
}
