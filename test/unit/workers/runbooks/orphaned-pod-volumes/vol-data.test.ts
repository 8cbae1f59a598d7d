import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseVolData, stagingPaths, volDataVolume } from '../../../../../workers/runbooks/orphaned-pod-volumes/vol-data.ts';

const REAL = readFileSync(new URL('../../../../fixtures/kubelet/vol_data.json', import.meta.url), 'utf8');

describe("kubelet's vol_data.json (test/fixtures/kubelet/vol_data.json)", () => {
  it('reads the keys kubelet writes', () => {
    expect(parseVolData(REAL)).toEqual({
      specVolID: 'pvc-dca8527d-0939-4c6a-a2cc-e66a673f062c',
      volumeHandle: 'pvc-dca8527d-0939-4c6a-a2cc-e66a673f062c',
      driverName: 'topsc.topke.io',
      nodeName: 'haaaa-10-30-100-149',
    });
  });

  it.each([
    ['not JSON', '{"driverName":'],
    ['a file without nodeName', '{"specVolID":"pv","volumeHandle":"h","driverName":"d"}'],
  ])('says why it cannot use %s', (_what, text) => {
    expect(typeof parseVolData(text)).toBe('string');
  });

  it("names both of kubelet's staging paths (sha256 of the handle since 1.24, the PV name before)", () => {
    const v = parseVolData(REAL);
    if (typeof v === 'string' || v === null) throw new Error(String(v));
    const sha = createHash('sha256').update('pvc-dca8527d-0939-4c6a-a2cc-e66a673f062c').digest('hex');
    expect(stagingPaths('/var/lib/kubelet', v)).toEqual([
      `/var/lib/kubelet/plugins/kubernetes.io/csi/topsc.topke.io/${sha}/globalmount`,
      '/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pvc-dca8527d-0939-4c6a-a2cc-e66a673f062c/globalmount',
    ]);
  });

  it('finds vol_data.json only directly in a CSI volume directory', () => {
    expect(volDataVolume('volumes/kubernetes.io~csi/pvc-1/vol_data.json')).toBe('pvc-1');
    expect(volDataVolume('volumes/kubernetes.io~csi/pvc-1/mount/vol_data.json')).toBeNull();
    expect(volDataVolume('volumes/kubernetes.io~empty-dir/x/vol_data.json')).toBeNull();
  });
});
