import { describe, expect, it } from 'vitest';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { realHostPath, SymlinkLoopError } from '../../../../workers/host/real-path.ts';
import { imageOutsideStateDir } from '../../../../workers/runbooks/local-pv-placeholder/image-path.ts';
import { createStepExecutor } from '../../../../workers/runbooks/local-pv-placeholder/execute-step.ts';
import { PlaceholderStore } from '../../../../workers/runbooks/local-pv-placeholder/record-store.ts';
import { RefusedError } from '../../../../src/core/errors.ts';
import { NO_KUBE_WRITES } from '../../../../workers/kube-writes/kube-writes.ts';

// realpath in host-path space: every component, parents included, through lstat/readlink.

const dir = (h: FakeHost, p: string): void => void h.put(p, { type: 'dir' });
const link = (h: FakeHost, p: string, target: string): void => void h.put(p, { type: 'symlink', target });

describe('realHostPath', () => {
  it('resolves symlinked parents, relative and absolute, and keeps a missing tail as written', async () => {
    const h = new FakeHost();
    dir(h, '/data/vm');
    link(h, '/var/lib/volume-medic', '/data/vm');
    link(h, '/data/vm/placeholders', '../../etc');
    dir(h, '/etc');
    expect(await realHostPath(h, '/var/lib/volume-medic')).toBe('/data/vm');
    expect(await realHostPath(h, '/var/lib/volume-medic/placeholders')).toBe('/etc');
    expect(await realHostPath(h, '/var/lib/volume-medic/placeholders/x.img')).toBe('/etc/x.img');
    expect(await realHostPath(h, '/var/lib/volume-medic/new/x.img')).toBe('/data/vm/new/x.img');
  });

  it('refuses a loop of links', async () => {
    const h = new FakeHost();
    link(h, '/a', '/b');
    link(h, '/b', '/a');
    await expect(realHostPath(h, '/a/x')).rejects.toBeInstanceOf(SymlinkLoopError);
  });
});

describe('the placeholder image must be ours, in STATE_DIR', () => {
  const store = new PlaceholderStore('/var/lib/volume-medic');

  it("accepts the store's image path (also before the directory exists, and under a symlinked STATE_DIR)", async () => {
    const h = new FakeHost();
    expect(await imageOutsideStateDir(h, store, '/var/lib/volume-medic/placeholders/local-pv-1.img')).toBeNull();
    dir(h, '/data/vm/placeholders');
    link(h, '/var/lib/volume-medic', '/data/vm');
    expect(await imageOutsideStateDir(h, store, '/var/lib/volume-medic/placeholders/local-pv-1.img')).toBeNull();
  });

  it('refuses another path, a placeholders directory that links out, and an image that is a symlink', async () => {
    const h = new FakeHost();
    expect(await imageOutsideStateDir(h, store, '/etc/shadow')).toMatch(/not a placeholder image/);
    expect(await imageOutsideStateDir(h, store, '/var/lib/volume-medic/placeholders/../../../../etc/x.img')).toMatch(/not a placeholder image/);
    dir(h, '/var/lib/volume-medic');
    link(h, '/var/lib/volume-medic/placeholders', '/srv/customer');
    expect(await imageOutsideStateDir(h, store, '/var/lib/volume-medic/placeholders/local-pv-1.img')).toMatch(/resolves to \/srv\/customer/);
    const h2 = new FakeHost();
    dir(h2, '/var/lib/volume-medic/placeholders');
    link(h2, '/var/lib/volume-medic/placeholders/local-pv-1.img', '/srv/customer/disk.img');
    expect(await imageOutsideStateDir(h2, store, '/var/lib/volume-medic/placeholders/local-pv-1.img')).toMatch(/is a symlink/);
  });

  it('refuses losetup and rm of an image outside before running anything', async () => {
    const h = new FakeHost();
    h.put('/etc/precious.img', 'keep');
    const exec = createStepExecutor(store);
    await expect(
      exec.apply({ kind: 'delete-image', id: 'delete-image:x', description: '', destructive: true, image: '/etc/precious.img' }, h, NO_KUBE_WRITES),
    ).rejects.toBeInstanceOf(RefusedError);
    await expect(
      exec.apply(
        { kind: 'attach-loop', id: 'attach-loop:x', description: '', destructive: false, loop: 'loop101', image: '/etc/precious.img' },
        h,
        NO_KUBE_WRITES,
      ),
    ).rejects.toBeInstanceOf(RefusedError);
    expect(await h.readFile('/etc/precious.img')).toBe('keep');
    expect(h.commands).toEqual([]);
  });
});
