import { describe, expect, it } from 'vitest';
import { parseBlocklistJson, parseBlocklistText } from '../../../../../workers/runbooks/rbd-stale-mapping/blocklist.ts';
import { blocklistAddArgv } from '../../../../../workers/runbooks/rbd-stale-mapping/ceph-commands.ts';
import { ipOf } from '../../../../../workers/runbooks/rbd-stale-mapping/watchers.ts';
import { cephFixture } from './ceph-fixture.ts';

// The blocklist as the lab's kernel RBD client met it, before and after the node's reboot
// (test/fixtures/ceph/blocklist/, captured by test/lab/out-of-service-taint-release.lab.test.ts):
// the parsers read what Ceph 16.2.15 printed with a real client's instance entry and a
// whole-host entry listed side by side.

/** Boot 1's kernel client, fenced by rbd-stale-mapping. */
const INSTANCE = '10.254.139.1:0/4140148666';
/** Boot 2's kernel client: a new instance at the same address. */
const NEW_INSTANCE = '10.254.139.1:0/3089027394';
const HOST = '10.254.139.1:0/0';
const fx = (name: string): string => cephFixture(`blocklist/${name}`);

describe('ceph osd blocklist, with a kernel client fenced by instance and by host', () => {
  it('reads the instance entry rbd-stale-mapping adds, in JSON and in text alike', () => {
    const entries = [{ addr: INSTANCE, until: '2026-12-07T12:03:36.933045+0000' }];
    expect(parseBlocklistJson(fx('ceph-osd-blocklist-ls-instance.json'))).toEqual(entries);
    expect(parseBlocklistText(fx('ceph-osd-blocklist-ls-instance.txt'))).toEqual(entries);
    expect(fx('ceph-osd-blocklist-add-instance.err')).toBe(`blocklisting ${INSTANCE} until 2026-12-07T12:03:36.933045+0000 (3600 sec)\n`);
    expect(blocklistAddArgv(INSTANCE, 3600).join(' ')).toBe(`ceph osd blocklist add ${INSTANCE} 3600`);
  });

  it('tells the whole-host entry from the instance entry of the same address: two entries, one IP', () => {
    const json = parseBlocklistJson(fx('ceph-osd-blocklist-ls-instance-and-host.json'));
    expect(json.map((e) => e.addr)).toEqual([HOST, INSTANCE]);
    expect(parseBlocklistText(fx('ceph-osd-blocklist-ls-instance-and-host.txt'))).toEqual(json);
    expect(new Set(json.map((e) => ipOf(e.addr)))).toEqual(new Set(['10.254.139.1']));
  });

  it('`rm` names exactly the entry it lifts', () => {
    expect(fx('ceph-osd-blocklist-rm-instance.err')).toBe(`un-blocklisting ${NEW_INSTANCE}\n`);
    expect(fx('ceph-osd-blocklist-rm-host.err')).toBe(`un-blocklisting ${HOST}\n`);
  });

  it('a fenced client fails `rbd map` with ESHUTDOWN (108): in the kernel for the instance, already in librbd for the host', () => {
    for (const f of ['rbd-map-fenced-instance.err', 'rbd-map-fenced-new-instance.err']) {
      expect(fx(f)).toBe('rbd: sysfs write failed\nrbd: map failed: (108) Cannot send after transport endpoint shutdown\n');
    }
    expect(fx('rbd-map-host-blocklisted.err')).toMatch(/^rbd: error opening image csi-vol-probe: \(108\) Cannot send after transport endpoint shutdown$/m);
    for (const f of ['rbd-map-instance-after-rm.txt', 'rbd-map-new-boot-old-instance-listed.txt', 'rbd-map-after-rm.txt'])
      expect(fx(f)).toMatch(/^\/dev\/rbd\d+\n$/);
  });
});
