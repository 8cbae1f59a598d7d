import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deterministicTar, gzipFile } from '../../../scripts/image/deterministic-tar.ts';

// The image's digest is only reproducible if a layer's bytes depend on the files alone: not on
// when they were written, in which order the directory lists them, or the tar process's id.

describe('a layer (GNU tar + gzip -n, scripts/image/deterministic-tar.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vm-layer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const tree = (name: string, order: string[], mtime: number) => {
    const root = join(dir, name);
    for (const f of order) {
      mkdirSync(join(root, 'etc', f), { recursive: true });
      writeFileSync(join(root, 'etc', f, 'file'), `${f}\n`);
      chmodSync(join(root, 'etc', f, 'file'), 0o644);
      utimesSync(join(root, 'etc', f, 'file'), mtime, mtime);
    }
    return root;
  };

  it('is the same bytes for the same files written at other times and in another order', () => {
    const a = tree('a', ['one', 'two', 'three'], 1_000_000);
    const b = tree('b', ['three', 'one', 'two'], 2_000_000);
    for (const [root, out] of [
      [a, 'a.tar'],
      [b, 'b.tar'],
    ] as const) {
      deterministicTar({ dir: root, out: join(dir, out), epoch: 1_700_000_000, owner0: true });
      gzipFile(join(dir, out), join(dir, `${out}.gz`));
    }
    expect(readFileSync(join(dir, 'a.tar')).equals(readFileSync(join(dir, 'b.tar')))).toBe(true);
    expect(readFileSync(join(dir, 'a.tar.gz')).equals(readFileSync(join(dir, 'b.tar.gz')))).toBe(true);
    // No PAX global header (it would carry the time of the build) and no process id in names.
    const text = readFileSync(join(dir, 'a.tar')).toString('latin1');
    expect(text).not.toContain('GlobalHead');
    expect(text).not.toMatch(/PaxHeaders\.\d+/);
  });
});
