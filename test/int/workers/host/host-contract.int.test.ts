import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../../../workers/host/host.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { followLink } from '../../../../workers/host/follow-link.ts';
import { createRealHost } from '../../../../workers/host/real-host.ts';

// One contract, two implementations (one suite run against both): the fake must behave like the real host on
// the file operations runbooks use, or unit tests on the fake prove nothing.

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'vm-host-contract-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const implementations: Array<[string, () => Host]> = [
  ['the real host under a temporary root', () => createRealHost({ root })],
  ['the fake host', () => new FakeHost()],
];

describe.each(implementations)('%s', (name, make) => {
  const base = `/c-${name.length}`;

  it('answers null, not an error, for what does not exist', async () => {
    const host = make();
    expect(await host.readFile(`${base}/missing`)).toBeNull();
    expect(await host.lstat(`${base}/missing`)).toBeNull();
    expect(await host.readlink(`${base}/missing`)).toBeNull();
    expect(await host.list(`${base}/missing-dir`)).toEqual([]);
    expect(await host.unlink(`${base}/missing`)).toBe(false);
  });

  it('writes, lists, renames and removes files', async () => {
    const host = make();
    await host.mkdir(`${base}/d`);
    await host.writeFile(`${base}/d/a.tmp`, 'hello');
    await host.rename(`${base}/d/a.tmp`, `${base}/d/a`);
    expect(await host.readFile(`${base}/d/a`)).toBe('hello');
    expect(await host.list(`${base}/d`)).toEqual(['a']);
    expect(await host.lstat(`${base}/d/a`)).toMatchObject({ type: 'file', size: 5 });
    expect(await host.unlink(`${base}/d/a`)).toBe(true);
    expect(await host.list(`${base}/d`)).toEqual([]);
  });

  it('keeps symlinks as links and resolves them in host-path space', async () => {
    const host = make();
    await host.mkdir(`${base}/dev/disk/by-id`);
    await host.writeFile(`${base}/dev/sdq`, '');
    await host.symlink('../../sdq', `${base}/dev/disk/by-id/wwn-0x1`);
    expect(await host.readlink(`${base}/dev/disk/by-id/wwn-0x1`)).toBe('../../sdq');
    expect(await host.lstat(`${base}/dev/disk/by-id/wwn-0x1`)).toMatchObject({ type: 'symlink' });
    expect(await followLink(host, `${base}/dev/disk/by-id/wwn-0x1`)).toMatchObject({ path: `${base}/dev/sdq`, info: { type: 'file' } });
  });

  it('refuses to create a sysfs attribute that does not exist', async () => {
    await expect(make().writeSysfs(`${base}/sys/block/sdq/device/delete`, '1')).rejects.toThrow();
  });

  it('refuses paths that climb out of the root', async () => {
    await expect(make().readFile('/../../etc/passwd')).rejects.toThrow(/not a normal absolute host path/);
  });
});

describe('the real host', () => {
  it('adds the root to command arguments only when it does not enter the host namespace', () => {
    expect(createRealHost({ root: '/host' }).argPath('/dev/loop101')).toBe('/host/dev/loop101');
    expect(createRealHost({ root: '/host', nsenter: true }).argPath('/dev/loop101')).toBe('/dev/loop101');
  });
});
