import { posix } from 'node:path';
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import type { FileInfo, Host, RunOptions } from '../../workers/host/host.ts';
import { assertHostPath } from '../../workers/host/paths.ts';

// A recording fake for unit tests: an in-memory file system keyed by host path, commands
// answered from scripts, and every call kept in `calls`. It validates paths like the real host,
// so a test cannot pass with a path the real host would refuse.

export type FakeNode =
  | { type: 'file'; content: string }
  | { type: 'dir' }
  | { type: 'symlink'; target: string }
  | { type: 'block' | 'char'; major: number; minor: number; size?: number };

export type FakeAnswer = Partial<Omit<CommandRecord, 'argv'>>;

export interface FakeCall {
  op: string;
  args: readonly unknown[];
}

export class FakeHost implements Host {
  readonly nodes = new Map<string, FakeNode>();
  readonly calls: FakeCall[] = [];
  readonly #scripts: Array<{ prefix: readonly string[]; answer: (argv: readonly string[]) => FakeAnswer }> = [];

  constructor(nodes: Record<string, FakeNode | string> = {}) {
    for (const [path, node] of Object.entries(nodes)) this.put(path, node);
  }

  /** Adds or replaces a node; a string is a regular file's content. */
  put(path: string, node: FakeNode | string): this {
    this.nodes.set(assertHostPath(path), typeof node === 'string' ? { type: 'file', content: node } : node);
    return this;
  }

  /** Answers commands starting with `prefix`; later scripts win over earlier ones. */
  on(prefix: readonly string[], answer: FakeAnswer | ((argv: readonly string[]) => FakeAnswer)): this {
    this.#scripts.unshift({ prefix, answer: typeof answer === 'function' ? answer : () => answer });
    return this;
  }

  /** The argv of every command run, in order. */
  get commands(): string[][] {
    return this.calls.filter((c) => c.op === 'run').map((c) => c.args as string[]);
  }

  async run(argv: readonly string[], _options?: RunOptions): Promise<CommandRecord> {
    this.calls.push({ op: 'run', args: [...argv] });
    const script = this.#scripts.find((s) => s.prefix.every((p, i) => argv[i] === p));
    const answer: FakeAnswer = script ? script.answer(argv) : { exitCode: 127, stderr: `fake host: no script for ${argv.join(' ')}` };
    return { argv: [...argv], exitCode: 0, signal: null, timedOut: false, durationMs: 0, stdout: '', stderr: '', ...answer };
  }

  argPath(path: string): string {
    return assertHostPath(path);
  }

  async readFile(path: string): Promise<string | null> {
    const node = this.nodes.get(assertHostPath(path));
    return node?.type === 'file' ? node.content : null;
  }

  async writeFile(path: string, data: string | Uint8Array): Promise<void> {
    this.#record('writeFile', path);
    this.put(path, { type: 'file', content: typeof data === 'string' ? data : Buffer.from(data).toString('latin1') });
  }

  async writeSysfs(path: string, value: string): Promise<void> {
    this.#record('writeSysfs', path, value);
    if (this.nodes.get(assertHostPath(path))?.type !== 'file') throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    this.put(path, value);
  }

  async symlink(target: string, path: string): Promise<void> {
    this.#record('symlink', target, path);
    if (this.nodes.has(assertHostPath(path))) throw Object.assign(new Error(`EEXIST: ${path}`), { code: 'EEXIST' });
    this.put(path, { type: 'symlink', target });
  }

  async readlink(path: string): Promise<string | null> {
    const node = this.nodes.get(assertHostPath(path));
    return node?.type === 'symlink' ? node.target : null;
  }

  async lstat(path: string): Promise<FileInfo | null> {
    const p = assertHostPath(path);
    const node = this.nodes.get(p);
    if (!node) return [...this.nodes.keys()].some((k) => k.startsWith(`${p}/`)) ? { type: 'dir', size: 0 } : null;
    switch (node.type) {
      case 'file':
        return { type: 'file', size: Buffer.byteLength(node.content) };
      case 'dir':
        return { type: 'dir', size: 0 };
      case 'symlink':
        return { type: 'symlink', size: node.target.length };
      default:
        return { type: node.type, size: node.size ?? 0, major: node.major, minor: node.minor };
    }
  }

  async list(dir: string): Promise<string[]> {
    const prefix = `${assertHostPath(dir).replace(/\/$/, '')}/`;
    const names = new Set<string>();
    for (const key of this.nodes.keys()) {
      if (key.startsWith(prefix)) names.add(key.slice(prefix.length).split('/')[0] ?? '');
    }
    names.delete('');
    return [...names].sort();
  }

  async rename(from: string, to: string): Promise<void> {
    this.#record('rename', from, to);
    const node = this.nodes.get(assertHostPath(from));
    if (!node) throw Object.assign(new Error(`ENOENT: ${from}`), { code: 'ENOENT' });
    this.nodes.delete(from);
    this.nodes.set(assertHostPath(to), node);
  }

  async unlink(path: string): Promise<boolean> {
    this.#record('unlink', path);
    return this.nodes.delete(assertHostPath(path));
  }

  async mkdir(path: string): Promise<void> {
    this.#record('mkdir', path);
    for (let p = assertHostPath(path); p !== '/'; p = posix.dirname(p)) {
      if (!this.nodes.has(p)) this.nodes.set(p, { type: 'dir' });
    }
  }

  #record(op: string, ...args: unknown[]): void {
    this.calls.push({ op, args });
  }
}
