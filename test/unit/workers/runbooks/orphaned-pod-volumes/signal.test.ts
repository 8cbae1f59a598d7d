import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseOrphanLine } from '../../../../../workers/runbooks/orphaned-pod-volumes/signal.ts';

const fixture = (name: string): string => readFileSync(new URL(`../../../../fixtures/kubelet/${name}`, import.meta.url), 'utf8').trim();

describe('parseOrphanLine: the three generations of kubelet_volumes.go (docs/decisions/0008 §1.1)', () => {
  it('reads the glog roll-up of kubelet up to 1.19 (volume paths)', () => {
    expect(parseOrphanLine(fixture('orphaned-glog.txt'))).toEqual({ uid: '626ab649-26c0-11e9-a791-001517ac3898', kind: 'volume-paths', numErrs: 1 });
  });

  it('reads the volume-subpaths variant with a lower-case "orphaned"', () => {
    expect(parseOrphanLine(fixture('orphaned-subpaths-glog.txt'))).toEqual({
      uid: 'cbefa9e9-9572-4bc8-809b-18083b88b232',
      kind: 'volume-subpaths',
      numErrs: 1,
    });
  });

  it('reads the structured klog line of 1.20+, unescaping the quoted err and taking numErrs', () => {
    expect(parseOrphanLine(fixture('orphaned-klog-structured.txt'))).toEqual({
      uid: '84344a7e-8003-462a-9321-a3f6c45e530f',
      kind: 'volumes-dir',
      errno: 'not a directory',
      numErrs: 4,
    });
  });

  it('reads the 1.6 form with its full stop and no roll-up', () => {
    const line =
      'E0301 10:00:00.000000    1234 kubelet_volumes.go:114] Orphaned pod "0b8c1e1a-1c2d-4e5f-8a9b-0c1d2e3f4a5b" found, but volume paths are still present on disk.';
    expect(parseOrphanLine(line)).toEqual({ uid: '0b8c1e1a-1c2d-4e5f-8a9b-0c1d2e3f4a5b', kind: 'volume-paths' });
  });

  it('reads a structured rmdir failure with its path and errno', () => {
    const line =
      'E0116 08:30:12.044483   66879 kubelet_volumes.go:245] "There were many similar errors. Turn up verbosity to see them." err="orphaned pod \\"84344a7e-8003-462a-9321-a3f6c45e530f\\" found, but failed to rmdir() volume at path /var/lib/kubelet/pods/84344a7e-8003-462a-9321-a3f6c45e530f/volumes/kubernetes.io~empty-dir/x: directory not empty" numErrs=40';
    expect(parseOrphanLine(line)).toEqual({
      uid: '84344a7e-8003-462a-9321-a3f6c45e530f',
      kind: 'rmdir-failed',
      path: '/var/lib/kubelet/pods/84344a7e-8003-462a-9321-a3f6c45e530f/volumes/kubernetes.io~empty-dir/x',
      errno: 'directory not empty',
      numErrs: 40,
    });
  });

  it.each([
    ['error occurred during reading volume dir from disk: permission denied', 'read-error'],
    ['error occurred during reading of volume-subpaths dir from disk: permission denied', 'read-error'],
    ['error occurred when trying to remove subdir \\"containers\\": device or resource busy', 'pod-dir'],
    ['error occurred when trying to remove the pod directory: directory not empty', 'pod-dir'],
  ])('classifies "%s" as %s', (tail, kind) => {
    const line = `E0116 08:30:12.044483 1 kubelet_volumes.go:245] "There were many similar errors." err="orphaned pod \\"84344a7e-8003-462a-9321-a3f6c45e530f\\" found, but ${tail}" numErrs=2`;
    expect(parseOrphanLine(line)).toMatchObject({ uid: '84344a7e-8003-462a-9321-a3f6c45e530f', kind, numErrs: 2 });
  });

  it.each([
    ['a UID that is not one', 'Orphaned pod "../../etc" found, but volume paths are still present on disk.'],
    ['an upper-case UID', 'Orphaned pod "626AB649-26C0-11E9-A791-001517AC3898" found, but volume paths are still present on disk.'],
    ['an empty UID', 'err="orphaned pod \\"\\" found, but error occurred when trying to remove the volumes dir: not a directory" numErrs=1'],
    ['a different tail', 'Orphaned pod "626ab649-26c0-11e9-a791-001517ac3898" found, but something else happened'],
    ['another kubelet line', 'E0211 03:20:21.964740 1597 kubelet.go:1] "Failed to start ContainerManager" err="cannot enter cgroupv2"'],
  ])('drops %s', (_what, line) => {
    expect(parseOrphanLine(line)).toBeNull();
  });
});
