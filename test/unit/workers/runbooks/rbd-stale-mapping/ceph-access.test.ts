import { describe, expect, it } from 'vitest';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import { createCephHost } from '../../../../../workers/runbooks/rbd-stale-mapping/ceph-access.ts';

describe('Ceph access', () => {
  it('adds --conf/--keyring/--id to Ceph tools only, and the record shows neither the arguments nor the values', async () => {
    const fake = new FakeHost()
      .on(['rbd'], { exitCode: 1, stderr: 'auth: unable to find a keyring on /etc/ceph/secret.keyring: (2) No such file or directory' })
      .on(['losetup'], { stdout: '' });
    const host = createCephHost(fake, { conf: '/etc/ceph/c.conf', keyring: '/etc/ceph/secret.keyring', id: 'volume-medic' });

    const r = await host.run(['rbd', 'status', 'kube/img']);
    expect(fake.commands[0]).toEqual([
      'rbd',
      '--conf',
      '/etc/ceph/c.conf',
      '--keyring',
      '/etc/ceph/secret.keyring',
      '--id',
      'volume-medic',
      'status',
      'kube/img',
    ]);
    expect(r.argv).toEqual(['rbd', 'status', 'kube/img']);
    expect(r.stderr).not.toContain('secret.keyring');
    expect(r.stderr).toContain('<redacted>');

    await host.run(['losetup', '-l']);
    expect(fake.commands[1]).toEqual(['losetup', '-l']);
  });
});
