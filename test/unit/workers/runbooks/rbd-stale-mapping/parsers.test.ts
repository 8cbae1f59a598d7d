import { describe, expect, it } from 'vitest';
import { isCephClientAddress } from '../../../../../src/core/catalogue/names.ts';
import { isReadOnlyCommand } from '../../../../../workers/host/read-only-commands.ts';
import { ipOf, parseListWatchers, parseRbdStatusJson, parseRbdStatusText } from '../../../../../workers/runbooks/rbd-stale-mapping/watchers.ts';
import { isNoSuchImage, parseRbdInfoJson, parseRbdInfoText } from '../../../../../workers/runbooks/rbd-stale-mapping/rbd-info.ts';
import { parseBlocklistJson, parseBlocklistText } from '../../../../../workers/runbooks/rbd-stale-mapping/blocklist.ts';
import { cephFixture } from './ceph-fixture.ts';

// Parsers on output captured from a real Ceph 16.2.15 (Debian 12), one-node cluster on loopback.

const W1 = { address: '127.0.0.1:0/2542345596', ip: '127.0.0.1', client: 'client.4116', cookie: '94023935613904' };
const W2 = { address: '127.0.0.1:0/1701404351', ip: '127.0.0.1', client: 'client.4151', cookie: '93967934180320' };

describe('rbd info', () => {
  it('finds the header object of a format 2 image in JSON and in text, and both agree', () => {
    const json = parseRbdInfoJson(cephFixture('rbd-info.json'));
    expect(json).toEqual({
      name: 'img1',
      id: '1012658802dd',
      format: 2,
      blockNamePrefix: 'rbd_data.1012658802dd',
      headerObject: 'rbd_header.1012658802dd',
    });
    expect(parseRbdInfoText(cephFixture('rbd-info.txt'))).toEqual(json);
  });

  it('uses <image>.rbd for a format 1 image', () => {
    const text = cephFixture('rbd-info.txt')
      .replace('block_name_prefix: rbd_data.1012658802dd', 'block_name_prefix: rb.0.1014.74b0dc51')
      .replace('format: 2', 'format: 1');
    expect(parseRbdInfoText(text)).toMatchObject({ format: 1, id: null, headerObject: 'img1.rbd' });
  });

  it('refuses a block_name_prefix that does not name an id instead of building an object name from it', () => {
    expect(() => parseRbdInfoJson(cephFixture('rbd-info.json').replace('rbd_data.1012658802dd', 'rbd_data.../x'))).toThrow(/does not name an image id/);
  });

  it('tells a missing image or pool from other failures', () => {
    expect(isNoSuchImage(cephFixture('rbd-info-missing-image.err'))).toBe(true);
    expect(isNoSuchImage(cephFixture('rbd-info-missing-pool.err'))).toBe(true);
    expect(isNoSuchImage('rbd: error opening image img1: (108) Cannot send after transport endpoint shutdown')).toBe(false);
  });
});

describe('watchers', () => {
  it('reads rados listwatchers (which prints text even when asked for JSON)', () => {
    expect(parseListWatchers(cephFixture('rados-listwatchers-one.txt'))).toEqual({ watchers: [W1], unparsed: [] });
    expect(parseListWatchers(cephFixture('rados-listwatchers-one.format-json.txt')).watchers).toEqual([W1]);
    expect(parseListWatchers(cephFixture('rados-listwatchers-two.txt')).watchers).toEqual([W2, W1]);
    expect(parseListWatchers(cephFixture('rados-listwatchers-none.txt'))).toEqual({ watchers: [], unparsed: [] });
  });

  it('reads rbd status in JSON and text alike, keeping the 64-bit cookie as printed', () => {
    expect(parseRbdStatusJson(cephFixture('rbd-status-two.json')).watchers).toEqual([W2, W1]);
    expect(parseRbdStatusText(cephFixture('rbd-status-two.txt')).watchers).toEqual([W2, W1]);
    expect(parseRbdStatusJson(cephFixture('rbd-status-one.json')).watchers).toEqual(parseRbdStatusText(cephFixture('rbd-status-one.txt')).watchers);
    expect(parseRbdStatusJson('{"watchers":[{"address":"10.0.0.5:0/1","client":1,"cookie":18446462598732840961}]}').watchers[0]?.cookie).toBe(
      '18446462598732840961',
    );
    expect(parseRbdStatusJson(cephFixture('rbd-status-none.json')).watchers).toEqual([]);
    expect(parseRbdStatusText(cephFixture('rbd-status-none.txt')).watchers).toEqual([]);
  });

  it('keeps a watcher line it cannot read as unparsed, never as a watcher', () => {
    const odd = parseListWatchers('watcher=v2:10.0.0.5:6800/1 client.1 cookie=2\nwatcher=10.0.0.5:0/1;rm client.1 cookie=2\n');
    expect(odd.watchers).toEqual([]);
    expect(odd.unparsed).toHaveLength(2);
  });

  it('takes the IP out of IPv4 and IPv6 addresses', () => {
    expect(ipOf('10.0.0.5:0/3710147553')).toBe('10.0.0.5');
    expect(ipOf('[fd00::5]:0/3710147553')).toBe('fd00::5');
    expect(isCephClientAddress('[fd00::5]:0/3710147553')).toBe(true);
    expect(isCephClientAddress('10.0.0.256:0/1')).toBe(false);
    expect(isCephClientAddress('10.0.0.5:0/1 --yes-i-really-mean-it')).toBe(false);
  });
});

describe('ceph osd blocklist ls', () => {
  it('reads the address list from JSON that carries a second (range) list behind it', () => {
    const entries = [{ addr: '127.0.0.1:0/1701404351', until: '2026-12-02T16:24:39.526331+0000' }];
    expect(parseBlocklistJson(cephFixture('ceph-osd-blocklist-ls-one.json'))).toEqual(entries);
    expect(parseBlocklistText(cephFixture('ceph-osd-blocklist-ls-one.txt'))).toEqual(entries);
    expect(parseBlocklistJson(cephFixture('ceph-osd-blocklist-ls-none.json'))).toEqual([]);
  });
});

describe('dry-run may run the Ceph commands that only look', () => {
  it.each([
    ['rbd', 'info', '--format', 'json', 'kube/img'],
    ['rbd', 'status', '--format', 'json', 'kube/img'],
    ['rados', '-p', 'kube', 'listwatchers', 'rbd_header.1012658802dd'],
    ['ceph', 'osd', 'blocklist', 'ls', '--format', 'json'],
    ['rbd', 'showmapped', '--format', 'json'],
  ])('%s %s ... looks', (...argv) => expect(isReadOnlyCommand(argv)).toBe(true));

  it.each([
    ['ceph', 'osd', 'blocklist', 'add', '10.0.0.5:0/1', '3600'],
    ['ceph', 'osd', 'blocklist', 'rm', '10.0.0.5:0/1'],
    ['rbd', 'unmap', '/dev/rbd0'],
    ['rbd', 'unmap', '-o', 'force', '/dev/rbd0'],
    ['rbd', 'device', 'unmap', '/dev/rbd0'],
    ['rados', '-p', 'kube', 'rm', 'rbd_header.1'],
    ['rbd', 'info', '--keyring', '/x', 'kube/img'],
  ])('%s %s %s ... changes (or is not known to look)', (...argv) => expect(isReadOnlyCommand(argv)).toBe(false));
});
