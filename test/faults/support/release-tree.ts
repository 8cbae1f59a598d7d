import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';

// A previous release's processes, as published: its commit's files (`git archive`) with its
// production dependencies (`npm ci --omit=dev`), in a cache directory outside the repository,
// made once and reused. CI's clone is fresh but its cache may persist, and two runs may start
// at once: the tree is built under a temporary name and renamed into place (atomic on one file
// system) with a marker file last, and a lock directory keeps a second builder waiting instead
// of building beside it. A tree without its marker is never used.

export interface Release {
  /** Where its package.json is: start its processes with this as the working directory. */
  root: string;
  /** How long obtaining it took, and what was done ("reused", "installed"). */
  ms: number;
  how: 'reused' | 'installed';
}

export type ReleaseOrSkip = Release | { skip: string };

const MARKER = '.volume-medic-release-complete';
const LOCK_STALE_MS = 15 * 60_000;

export function releasesCacheDir(): string {
  const base = process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache');
  return join(base, 'volume-medic', 'releases');
}

/** The release `version` at `commit` of the repository at `repo`, installed in the cache (or why it cannot be). */
export function obtainRelease(repo: string, version: string, commit: string, log: (line: string) => void): ReleaseOrSkip {
  const started = Date.now();
  const root = join(releasesCacheDir(), `${version}-${commit}`);
  if (complete(root)) return { root, ms: Date.now() - started, how: 'reused' };
  const missing = ensureCommit(repo, commit, log);
  if (missing) return { skip: missing };
  mkdirSync(dirname(root), { recursive: true });
  const lock = `${root}.lock`;
  takeLock(lock, log);
  try {
    if (complete(root)) return { root, ms: Date.now() - started, how: 'reused' };
    const tmp = `${root}.tmp-${process.pid}`;
    // Under the lock nobody else builds: what a killed run left half-made goes.
    for (const left of readdirSync(dirname(root)).filter((f) => f.startsWith(`${basename(root)}.tmp-`))) {
      rmSync(join(dirname(root), left), { recursive: true, force: true });
    }
    rmSync(root, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const archive = spawnSync('git', ['-C', repo, 'archive', '--format=tar', commit], { maxBuffer: 512 * 1024 * 1024, timeout: 120_000 });
    if (archive.status !== 0) throw new Error(`git archive ${commit} failed: ${archive.stderr?.toString()}`);
    execFileSync('tar', ['-x', '-C', tmp], { input: archive.stdout, timeout: 120_000 });
    log(`${version} (${commit.slice(0, 12)}): npm ci --omit=dev in ${tmp}`);
    const npmStarted = Date.now();
    const npm = spawnSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: tmp,
      encoding: 'utf8',
      timeout: 10 * 60_000,
      env: { ...process.env, NODE_ENV: 'production' },
    });
    if (npm.status !== 0) throw new Error(`npm ci --omit=dev for ${version} failed (${npm.status ?? npm.signal}): ${npm.stderr}`);
    log(`${version}: npm ci took ${((Date.now() - npmStarted) / 1000).toFixed(1)} s`);
    writeFileSync(join(tmp, MARKER), `${commit}\n`);
    renameSync(tmp, root);
    return { root, ms: Date.now() - started, how: 'installed' };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function complete(root: string): boolean {
  return existsSync(join(root, MARKER));
}

/** Undefined when the commit is in the clone (fetched if need be), else why the release cannot be had. */
function ensureCommit(repo: string, commit: string, log: (line: string) => void): string | undefined {
  const has = (): boolean => spawnSync('git', ['-C', repo, 'cat-file', '-e', `${commit}^{commit}`], { timeout: 30_000 }).status === 0;
  if (has()) return undefined;
  log(`commit ${commit} is not in this clone (shallow?): git fetch origin ${commit}`);
  const fetched = spawnSync('git', ['-C', repo, 'fetch', '--no-tags', 'origin', commit], { encoding: 'utf8', timeout: 120_000 });
  if (has()) return undefined;
  return `commit ${commit} is not in this clone and \`git fetch origin ${commit}\` did not bring it (${(fetched.stderr || String(fetched.status)).trim().slice(0, 300)}); a full clone has it`;
}

/** mkdir is atomic: whoever makes the directory holds the lock; one older than LOCK_STALE_MS was left by a run that died. */
function takeLock(lock: string, log: (line: string) => void): void {
  const deadline = Date.now() + LOCK_STALE_MS;
  let said = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (stale(lock) || Date.now() > deadline) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (!said) log(`waiting for another run's install (${lock})`);
    said = true;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  }
}

function stale(lock: string): boolean {
  try {
    if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) return true;
    const pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return false;
  } catch (err) {
    // ESRCH: its builder is gone. ENOENT: the pid is not written yet (the builder just made it), not stale.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
