import type { CommandRecord } from '../../src/core/catalogue/result.ts';

// The Host port: the only way a runbook touches a node. Every path given to it is a *host path*
// (what the path is on the node itself, e.g. `/dev/disk/by-id/wwn-0x...`); the implementation
// maps it under its root (`/host` in a DaemonSet pod, `/` on a plain machine, a temporary folder
// in tests). Commands are argv arrays, never shell strings.

export type FileType = 'file' | 'dir' | 'symlink' | 'block' | 'char' | 'other';

export interface FileInfo {
  type: FileType;
  size: number;
  /** Device numbers, for block and character devices only. */
  major?: number;
  minor?: number;
}

export interface RunOptions {
  /** Deadline for the whole process group; the host's default when absent. */
  timeoutMs?: number;
}

export interface Host {
  /** Runs argv with a deadline that kills the whole process group. Never throws for a non-zero exit. */
  run(argv: readonly string[], options?: RunOptions): Promise<CommandRecord>;
  /**
   * The host path as a command sees it. Commands run in the agent's own mount namespace unless
   * the host enters the host's (`nsenter`), so without nsenter this adds the root; with it, not.
   */
  argPath(hostPath: string): string;
  /** File contents, or null when the file does not exist. */
  readFile(path: string): Promise<string | null>;
  writeFile(path: string, data: string | Uint8Array): Promise<void>;
  /** Writes an attribute that must already exist (never creates a file under /sys). */
  writeSysfs(path: string, value: string): Promise<void>;
  symlink(target: string, path: string): Promise<void>;
  /** Link target, or null when the path does not exist or is not a symlink. */
  readlink(path: string): Promise<string | null>;
  /**
   * Like lstat(2): never follows the last component. Following an absolute link from inside a
   * root would leave the root, so callers resolve links in host-path space (see follow-link.ts).
   */
  lstat(path: string): Promise<FileInfo | null>;
  /** Entry names, [] when the directory does not exist. */
  list(dir: string): Promise<string[]>;
  /** rename(2): atomic replacement within one file system. */
  rename(from: string, to: string): Promise<void>;
  /** Removes a file or link; false when it was already gone. */
  unlink(path: string): Promise<boolean>;
  /** mkdir -p */
  mkdir(path: string): Promise<void>;
}
