import { describe, expect, it } from 'vitest';
import { majorMinorOfDev, parsePodTree, treeArgv } from '../../../../../workers/runbooks/orphaned-pod-volumes/pod-tree.ts';

const rec = (...fields: string[]): string => `${fields.join('\t')}\0`;

describe('parsePodTree: find -P -printf %y\\t%D\\t%s\\t%P\\0 records', () => {
  it('reads every record, the directory itself first with the empty path', () => {
    const out =
      rec('d', '2049', '4096', '') +
      rec('d', '2049', '4096', 'volumes') +
      rec('f', '2049', '231', 'volumes/kubernetes.io~csi/pvc-1/vol_data.json') +
      rec('l', '2049', '9', 'plugins/x');
    expect(parsePodTree(out)).toEqual({
      ok: true,
      entries: [
        { type: 'dir', dev: '2049', size: 4096, rel: '' },
        { type: 'dir', dev: '2049', size: 4096, rel: 'volumes' },
        { type: 'file', dev: '2049', size: 231, rel: 'volumes/kubernetes.io~csi/pvc-1/vol_data.json' },
        { type: 'symlink', dev: '2049', size: 9, rel: 'plugins/x' },
      ],
    });
  });

  it('keeps a tab inside a path (everything after the third tab is the path)', () => {
    const r = parsePodTree(rec('d', '1', '0', '') + rec('f', '1', '0', 'a\tb'));
    expect(r.ok && r.entries[1]?.rel).toBe('a\tb');
  });

  it.each([
    ['empty output', ''],
    ['output cut before its last NUL', `${rec('d', '1', '0', '')}f\t1\t0\tetc-ho`],
    ['a record with three fields', `${rec('d', '1', '0', '')}f\t1\tetc-hosts\0`],
    ['an unknown type letter', rec('d', '1', '0', '') + rec('x', '1', '0', 'y')],
    ['a non-numeric st_dev', rec('d', 'sda', '0', '')],
    ['a path that climbs out', rec('d', '1', '0', '') + rec('d', '1', '0', '../other')],
    ['an absolute path', rec('d', '1', '0', '') + rec('d', '1', '0', '/etc')],
    ['no directory record for the start', rec('f', '1', '0', 'x')],
    ['a start that is not a directory', rec('l', '1', '0', '')],
  ])('rejects %s', (_what, out) => {
    expect(parsePodTree(out).ok).toBe(false);
  });

  it('lists with -P (never following a link) and -xdev, and nothing that changes anything', () => {
    expect(treeArgv('/var/lib/kubelet/pods/u')).toEqual(['find', '-P', '/var/lib/kubelet/pods/u', '-xdev', '-printf', '%y\\t%D\\t%s\\t%P\\0']);
  });

  it('turns a decimal st_dev into mountinfo major:minor', () => {
    expect(majorMinorOfDev('2049')).toBe('8:1');
    expect(majorMinorOfDev('64768')).toBe('253:0');
    expect(majorMinorOfDev('66305')).toBe('259:1');
  });
});
