// orphaned-pod-volumes on a real kernel (docs/decisions/0008 §2.7): Debian 12's kernel under qemu,
// no kubelet. The test builds a pod directory the way kubelet lays it out, with an ext4 on a
// multipath map (scsi_debug) as its CSI volume and a sentinel file of random bytes on it; the API
// server knows no pod of the UID (in-memory), `crictl` and `systemctl` are stubs in the guest
// that say "no sandbox" and "kubelet active". The real runbook code runs here and acts on the
// guest through guest-host.ts. What it must do:
//   - refuse while the volume is mounted in the host's namespace (mounted-in-namespace, pid 1);
//   - refuse while a second mount namespace (`unshare -m --propagation private sleep infinity`)
//     still holds the volume after the host unmounted it, naming the sleep's pid; and the
//     control proving why that matters: a plain rmdir from the host namespace of a directory that
//     is a mount point only in that other namespace succeeds, and the mount there vanishes;
//   - refuse an extra file (entry-not-ours) and a file system boundary (crosses-filesystem);
//   - dry-run changes nothing; enforce removes the tree once nothing holds it, and the volume
//     mounted again shows the sentinel with the same sha256.
// LAB_WRITE_FIXTURES=1 writes /proc/1/mountinfo and the holder's to test/fixtures/mountinfo/second-namespace/.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrphanedPodVolumesJob } from '../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../src/core/catalogue/result.ts';
import { RefusedError } from '../../src/core/errors.ts';
import { ParkedError } from '../../workers/engine/gate.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import { createOrphanedPodVolumes } from '../../workers/runbooks/orphaned-pod-volumes/handler.ts';
import { InMemoryOrphanKube } from '../../workers/runbooks/orphaned-pod-volumes/orphan-kube.ts';
import { guestHost } from './guest-host.ts';
import { labSkipReason } from './image.ts';
import { createScsiDebugMap, type GuestMap } from './scsi-debug-scenario.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (orphaned-pod-volumes): ${skipReason} ***\n`);

const NODE = 'lab-node';
const STATE_DIR = '/var/lib/volume-medic';
const ROOT = '/var/lib/kubelet';
const UID = '5f0e3c2a-7b1d-4e8f-9a6c-2d4b8e0f1a3c';
const POD = `${ROOT}/pods/${UID}`;
const VOL = `${POD}/volumes/kubernetes.io~csi/pvc-1`;
const MOUNT = `${VOL}/mount`;
/** Short, so the second look of the lab is enough; the refused runs before it count as looks. */
const MIN_AGE_MS = 2_000;
const log = (line: string) => console.log(line);
const fixtureDir =
  process.env.LAB_WRITE_FIXTURES === '1'
    ? fileURLToPath(new URL('../fixtures/mountinfo/second-namespace/', import.meta.url))
    : mkdtempSync(join(tmpdir(), 'volume-medic-lab-orphan-'));

const job = (n: number): OrphanedPodVolumesJob => ({
  version: 1,
  runbook: 'orphaned-pod-volumes',
  key: `orphaned-pod-volumes.${NODE}.${UID}.lab${n}`,
  target: { node: NODE, podUid: UID },
  evidence: [{ source: 'k8s-event', summary: 'OrphanedPodVolumes (lab)', raw: {} }],
});
const ctx = (mode: Mode, n: number): RunbookContext => ({
  jobId: job(n).key,
  attempt: 1,
  mode,
  ranOn: NODE,
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

/** kubelet's vol_data.json of test/fixtures/kubelet/, for this node and PV. */
const volData = (): string =>
  readFileSync(new URL('../fixtures/kubelet/vol_data.json', import.meta.url), 'utf8')
    .replace('"haaaa-10-30-100-149"', JSON.stringify(NODE))
    .replace(/pvc-dca8527d-0939-4c6a-a2cc-e66a673f062c/g, 'pvc-1');

const STUBS = `set -e
printf '#!/bin/sh\\n[ "$*" = "pods -o json" ] && echo "{\\\\"items\\\\":[]}" && exit 0\\nexit 1\\n' > /usr/local/bin/crictl
printf '#!/bin/sh\\n[ "$*" = "is-active kubelet" ] && echo active && exit 0\\nexit 3\\n' > /usr/local/bin/systemctl
chmod +x /usr/local/bin/crictl /usr/local/bin/systemctl`;

/** Every entry of the pod tree with its type, size and content hash: equal before and after means nothing changed. */
const TREE_STATE = `cd ${POD} && find -P . -printf '%y %s %p\\n' | sort && find -P . -xdev -type f -exec sha256sum {} + | sort`;

describe.skipIf(skipReason !== null)('orphaned-pod-volumes on a real kernel (scsi_debug, dm-multipath, a second mount namespace)', () => {
  let vm: LabVm;
  let map: GuestMap;
  let sentinelSha = '';
  let holder = 0;
  const stats = { snapshots: 0, commands: 0 };
  let run: (n: number, mode: Mode) => Promise<RunbookResult>;

  const refusal = async (n: number): Promise<string> => {
    const err = await run(n, 'enforce').then(
      (r) => r,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RefusedError);
    const reasons = (err as RefusedError).reasons.join('\n');
    log(`[orphan-lab] job ${n} refused: ${reasons}`);
    return reasons;
  };

  beforeAll(async () => {
    vm = await bootLabVm({ log });
    map = await createScsiDebugMap(vm);
    await vm.runOk(STUBS);
    await vm.runOk(
      `set -e; mkfs.ext4 -q /dev/mapper/${map.name}; mkdir -p /mnt/prep; mount /dev/mapper/${map.name} /mnt/prep
       head -c 1048576 /dev/urandom > /mnt/prep/sentinel; sync; umount /mnt/prep`,
    );
    sentinelSha = (
      await vm.runOk(`mount -o ro /dev/mapper/${map.name} /mnt/prep && sha256sum /mnt/prep/sentinel | cut -d' ' -f1; umount /mnt/prep`)
    ).stdout.trim();
    await vm.runOk(
      `set -e; mkdir -p ${MOUNT} ${POD}/volumes/kubernetes.io~empty-dir/cache ${POD}/containers/app ${POD}/plugins ${ROOT}/plugins/kubernetes.io/csi
       echo '127.0.0.1 localhost' > ${POD}/etc-hosts; : > ${POD}/containers/app/0a1b2c3d
       mount /dev/mapper/${map.name} ${MOUNT}`,
    );
    await vm.runOk(['tee', `${VOL}/vol_data.json`], { stdin: volData() });
    const handler = createOrphanedPodVolumes({
      host: guestHost(vm, stats, STATE_DIR),
      stateDir: STATE_DIR,
      kube: new InMemoryOrphanKube({}, { [NODE]: [] }),
      policy: { kubeletRoot: ROOT, minAgeMs: MIN_AGE_MS },
    });
    run = async (n, mode) => {
      for (let tries = 0; ; tries++) {
        try {
          return await handler(job(n), ctx(mode, n));
        } catch (err) {
          // Maturing evidence parks the job; the agent runs it again when it may.
          if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || tries >= 3) throw err;
          await new Promise((r) => setTimeout(r, Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 100));
        }
      }
    };
    log(`[orphan-lab] map ${map.name} (${map.dm}) mounted at ${MOUNT}; sentinel sha256 ${sentinelSha}`);
  }, 10 * 60_000);

  afterAll(async () => {
    if (holder) await vm?.run(['kill', String(holder)]);
    await vm?.shutdown();
    log(`[orphan-lab] guest snapshots ${stats.snapshots}, commands ${stats.commands}`);
  });

  it('refuses while the volume is mounted in the host mount namespace', async () => {
    const reasons = await refusal(1);
    expect(reasons).toMatch(new RegExp(`mounted-in-namespace: ${MOUNT} is a mount point in the host's mount namespace: pid 1 `));
    expect((await vm.runOk(['findmnt', '-n', '-o', 'SOURCE', MOUNT])).stdout.trim()).toBe(`/dev/mapper/${map.name}`);
  }, 180_000);

  it('refuses while only a second mount namespace holds the volume, naming its pid; and shows why: rmdir from the host namespace would succeed', async () => {
    holder = Number((await vm.runOk('setsid unshare -m --propagation private sleep infinity </dev/null >/dev/null 2>&1 & echo $!')).stdout.trim());
    expect(holder).toBeGreaterThan(1);
    // The copy of the host's mounts is made when unshare runs: wait until the namespace exists.
    await vm.runOk(
      `for i in $(seq 1 50); do [ "$(readlink /proc/${holder}/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] && grep -q ' ${MOUNT} ' /proc/${holder}/mountinfo && exit 0; sleep 0.2; done; exit 1`,
    );
    await vm.runOk(`set -e; mkdir -p /mnt/held; nsenter -t ${holder} -m -- mount --bind ${MOUNT} /mnt/held; umount ${MOUNT}`);
    expect((await vm.run(['findmnt', '-n', MOUNT])).stdout.trim()).toBe('');
    const hostInfo = (await vm.runOk(['cat', '/proc/1/mountinfo'])).stdout;
    const heldInfo = (await vm.runOk(['cat', `/proc/${holder}/mountinfo`])).stdout;
    expect(heldInfo).toContain(` ${MOUNT} `);
    mkdirSync(fixtureDir, { recursive: true });
    writeFileSync(join(fixtureDir, 'host.mountinfo'), hostInfo);
    writeFileSync(join(fixtureDir, 'holder.mountinfo'), heldInfo);
    writeFileSync(
      join(fixtureDir, 'index.json'),
      `${JSON.stringify(
        {
          scenario: 'second-namespace',
          description: `a CSI volume's mount point (${MOUNT}) unmounted in the host's namespace but still mounted, and bind-mounted at /mnt/held, in a second mount namespace (unshare -m --propagation private sleep infinity, pid ${holder})`,
          source: 'volume-medic lab guest (test/lab/orphaned-pod-volumes.lab.test.ts): real kernel under qemu',
          kernel: (await vm.runOk(['uname', '-r'])).stdout.trim(),
          files: { 'host.mountinfo': 'cat /proc/1/mountinfo', 'holder.mountinfo': `cat /proc/${holder}/mountinfo` },
          pod: POD,
          holderPid: holder,
          device: `/dev/mapper/${map.name}`,
        },
        null,
        2,
      )}\n`,
    );

    const reasons = await refusal(2);
    expect(reasons).toMatch(new RegExp(`mounted-in-namespace: ${MOUNT} is a mount point in mount namespace mnt:\\[\\d+\\]: pid ${holder} \\(sleep\\)`));
    expect(reasons).not.toContain("host's mount namespace");

    // The control (kernel behaviour of §1.2, on a throwaway directory): a directory that is a
    // mount point only in the other namespace is removed by a plain rmdir from the host's, and
    // the other namespace's mount goes with it (detached lazily), without any error.
    await vm.runOk(
      `set -e; mkdir -p /var/lib/throwaway/x; nsenter -t ${holder} -m -- mount -t tmpfs tmpfs /var/lib/throwaway/x; nsenter -t ${holder} -m -- touch /var/lib/throwaway/x/in-tmpfs`,
    );
    expect((await vm.runOk(['cat', `/proc/${holder}/mountinfo`])).stdout).toContain(' /var/lib/throwaway/x ');
    expect((await vm.run(['findmnt', '-n', '/var/lib/throwaway/x'])).stdout.trim()).toBe('');
    const rmdir = await vm.run(['rmdir', '--', '/var/lib/throwaway/x']);
    expect(rmdir.code).toBe(0);
    expect((await vm.runOk(['cat', `/proc/${holder}/mountinfo`])).stdout).not.toContain(' /var/lib/throwaway/x ');
    // The volume's mount in the holder survived all this: the runbook refused, it never rmdir'ed.
    expect((await vm.runOk(['cat', `/proc/${holder}/mountinfo`])).stdout).toContain(` ${MOUNT} `);
    expect((await vm.runOk(['test', '-d', MOUNT])).code).toBe(0);
  }, 180_000);

  it('refuses an extra file in the tree (entry-not-ours), once the holder is gone', async () => {
    await vm.runOk(`kill ${holder}; for i in $(seq 1 50); do [ -e /proc/${holder} ] || exit 0; sleep 0.2; done; exit 1`);
    holder = 0;
    expect((await vm.runOk('cat /proc/*/mountinfo 2>/dev/null | grep -c " /mnt/held \\| pvc-1/mount " || true')).stdout.trim()).toBe('0');
    await vm.runOk(`mkdir -p ${POD}/volumes/kubernetes.io~empty-dir/x && echo data > ${POD}/volumes/kubernetes.io~empty-dir/x/data`);
    const reasons = await refusal(3);
    expect(reasons).toContain(`entry-not-ours: volumes/kubernetes.io~empty-dir/x/data (file, 5 bytes)`);
    expect((await vm.runOk(['cat', `${POD}/volumes/kubernetes.io~empty-dir/x/data`])).stdout).toBe('data\n');
    await vm.runOk(['rm', '--', `${POD}/volumes/kubernetes.io~empty-dir/x/data`]);
  }, 180_000);

  it('refuses across a file system boundary (crosses-filesystem)', async () => {
    await vm.runOk(`mkdir -p ${POD}/volumes/kubernetes.io~empty-dir/m && mount -t tmpfs tmpfs ${POD}/volumes/kubernetes.io~empty-dir/m`);
    const reasons = await refusal(4);
    expect(reasons).toMatch(/crosses-filesystem: volumes\/kubernetes\.io~empty-dir\/m \(st_dev \d+\)/);
    await vm.runOk(['umount', `${POD}/volumes/kubernetes.io~empty-dir/m`]);
  }, 180_000);

  it('plans in dry-run the unlinks and rmdirs, and changes nothing on disk', async () => {
    const before = (await vm.runOk(TREE_STATE)).stdout;
    const r = await run(5, 'dry-run');
    log(`[orphan-lab] dry-run: ${r.outcome}: ${r.summary}`);
    expect(r.outcome).toBe('planned');
    const argv = r.commands.map((c) => c.argv.join(' '));
    expect(argv).toContain(`unlink -- ${VOL}/vol_data.json`);
    expect(argv).toContain(`rmdir -- ${MOUNT}`);
    expect(argv).toContain(`rmdir -- ${POD}`);
    expect(r.commands.filter((c) => c.argv[0] === 'rmdir' || c.argv[0] === 'unlink').every((c) => c.exitCode === null)).toBe(true);
    expect((await vm.runOk(TREE_STATE)).stdout).toBe(before);
  }, 180_000);

  it('removes the tree once nothing holds it, and the volume still has the sentinel, byte for byte', async () => {
    const r = await run(6, 'enforce');
    log(`[orphan-lab] enforce: ${r.outcome}: ${r.summary}; steps ${r.steps.map((s) => `${s.id} ${s.status}`).join(', ')}`);
    expect(r.outcome).toBe('succeeded');
    expect(r.verification).toMatchObject({ ok: true });
    expect(r.commands.some((c) => c.argv[0] === 'rm' || c.argv.includes('-r') || c.argv.includes('-delete'))).toBe(false);
    expect((await vm.run(['test', '-e', POD])).code).not.toBe(0);
    expect((await vm.runOk(['test', '-d', `${ROOT}/pods`])).code).toBe(0);
    const sha = (
      await vm.runOk(
        `mkdir -p /mnt/check && mount -o ro /dev/mapper/${map.name} /mnt/check && sha256sum /mnt/check/sentinel | cut -d' ' -f1; umount /mnt/check`,
      )
    ).stdout.trim();
    expect(sha).toBe(sentinelSha);
  }, 300_000);
});
