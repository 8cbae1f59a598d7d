import { readFileSync } from 'node:fs';
import type { PodInfo } from '../../../../../src/adapters/kube/lookups.ts';
import { InMemoryLookups } from '../../../../../src/adapters/kube/lookups.ts';
import type { DeletePodRequest, KubeWrites, PatchNodeTaintsRequest, StepEvent } from '../../../../../workers/kube-writes/kube-writes.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import { KUBELET, NODE, PUBLISH, STAGING, UID } from './facts.fixture.ts';

// A node whose ext4 PV on mpatha (dm-0, a scsi_debug map: the multipath fixtures are the lab's real
// captures) the kernel stopped after every path died; `pathsBack()` brings the paths back.

const multipathLl = (scenario: string): string => readFileSync(new URL(`../../../../fixtures/multipath/${scenario}/multipath-ll.txt`, import.meta.url), 'utf8');

const journal = (): string =>
  [
    ['EXT4-fs (dm-0): mounted filesystem with ordered data mode. Quota mode: none.', '1796634000000000'],
    ['I/O error, dev sdb, sector 2048 op 0x1:(WRITE) flags 0x9800 phys_seg 1 prio class 2', '1796637000000000'],
    ['Buffer I/O error on dev dm-0, logical block 1, lost async page write', '1796637000100000'],
    ['EXT4-fs error (device dm-0): ext4_journal_check_start:83: comm dd: Detected aborted journal', '1796637000200000'],
    ['EXT4-fs (dm-0): Remounting filesystem read-only', '1796637000300000'],
  ]
    .reverse()
    .map(([MESSAGE, t]) =>
      JSON.stringify({ __CURSOR: 'c', __REALTIME_TIMESTAMP: t, __MONOTONIC_TIMESTAMP: '1', _BOOT_ID: '0d4b3a2c1e0f4a5b9c8d7e6f5a4b3c2d', MESSAGE }),
    )
    .join('\n');

export const stoppedMountinfo = (superOptions = 'ro,errors=remount-ro'): string =>
  [
    '25 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw',
    `300 25 253:0 / ${STAGING} rw,relatime - ext4 /dev/mapper/mpatha ${superOptions}`,
    `301 25 253:0 / ${PUBLISH} rw,relatime - ext4 /dev/mapper/mpatha ${superOptions}`,
    '',
  ].join('\n');

export function fakeNode(): FakeHost & { pathsBack(): void } {
  const host = new FakeHost({
    '/proc/sys/kernel/random/boot_id': '0d4b3a2c-1e0f-4a5b-9c8d-7e6f5a4b3c2d\n',
    '/proc/1/mountinfo': stoppedMountinfo(),
    '/sys/dev/block/253:0': { type: 'symlink', target: '../../devices/virtual/block/dm-0' },
    '/sys/block/dm-0/dev': '253:0\n',
    '/sys/block/dm-0/dm/uuid': 'mpath-1Linux_scsi_debug_2000\n',
    '/sys/block/dm-0/dm/name': 'mpatha\n',
    '/sys/fs/ext4/dm-0/errors_count': '1\n',
    '/sys/fs/ext4/dm-0/last_error_time': '1796637000\n',
    '/proc/fs/ext4/dm-0/options': 'rw\nerrors=remount-ro\n',
    [`${KUBELET}/pods/${UID}`]: { type: 'dir' },
  });
  host.on(['journalctl'], { stdout: journal() });
  host.on(['multipath', '-ll'], { stdout: multipathLl('all-paths-failed') });
  host.on(['dd'], { exitCode: 1, stderr: "dd: error reading '/dev/dm-0': Input/output error" });
  return Object.assign(host, {
    pathsBack(): void {
      host.on(['multipath', '-ll'], { stdout: multipathLl('healthy') });
      host.on(['dd'], { exitCode: 0, stderr: '1+0 records in\n1+0 records out\n' });
    },
  });
}

export const thePod = (over: Partial<PodInfo> = {}): PodInfo => ({
  namespace: 'shop',
  name: 'db-0',
  uid: UID,
  node: NODE,
  phase: 'Running',
  claims: ['data-db-0'],
  waiting: [],
  controller: { kind: 'StatefulSet', name: 'db' },
  resourceVersion: '4711',
  ...over,
});

/** The API server's pods; `then` are the answers of later fresh reads (the last one stays). */
export function lookups(pod: PodInfo = thePod(), ...then: Array<PodInfo | undefined>): InMemoryLookups & { replacePod(p: PodInfo | undefined): void } {
  const l = new InMemoryLookups([
    {
      name: 'pvc-1',
      volumeMode: 'Filesystem',
      accessModes: ['ReadWriteOnce'],
      claim: { namespace: 'shop', name: 'data-db-0' },
      csi: { driver: 'driver.example.com', volumeHandle: 'v-1', attributes: {} },
    },
  ]);
  const answers: Array<PodInfo | undefined> = [pod, ...then];
  l.addPod(pod);
  return Object.assign(l, {
    replacePod(p: PodInfo | undefined): void {
      answers.splice(0, answers.length, p);
    },
    async pod(): Promise<PodInfo | undefined> {
      return answers.length > 1 ? answers.shift() : answers[0];
    },
  });
}

/** The write port as a recording fake: what a step asked of the API server, in order. */
export class RecordingKubeWrites implements KubeWrites {
  readonly deletes: DeletePodRequest[] = [];
  readonly events: StepEvent[] = [];
  /** What happens on the node when the API server accepts the delete (a test's kubelet). */
  onDelete: () => void = () => {};
  async deletePod(r: DeletePodRequest): Promise<boolean> {
    this.deletes.push(r);
    this.onDelete();
    return true;
  }
  async patchNodeTaints(_r: PatchNodeTaintsRequest): Promise<void> {
    throw new Error('readonly-filesystem-recovery never patches a node');
  }
  async event(e: StepEvent): Promise<void> {
    this.events.push(e);
  }
}
