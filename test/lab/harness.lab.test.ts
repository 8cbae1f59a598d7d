// The lab harness itself, on a real kernel: boot the cached guest, drive it, build scsi_debug
// multipath maps, fail their paths, and capture what a host really shows in each state.
// LAB_WRITE_FIXTURES=1 writes the captures to test/fixtures/multipath/<scenario>/ (commit them);
// otherwise they go to a temporary folder, so a plain run never changes the checkout.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureMultipathState, writeFixtureDir } from './capture.ts';
import { ensureLabImage, labSkipReason, type LabImage } from './image.ts';
import { waitInGuest } from './guest-wait.ts';
import { createIscsiLab, removeLun } from './iscsi-scenario.ts';
import { createScsiDebugMap, failPaths, listMaps, pathStates, waitUntilActive, type GuestMap } from './scsi-debug-scenario.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED: ${skipReason} ***\n`);

const fixturesRoot =
  process.env.LAB_WRITE_FIXTURES === '1'
    ? fileURLToPath(new URL('../fixtures/multipath/', import.meta.url))
    : mkdtempSync(join(tmpdir(), 'volume-medic-lab-fixtures-'));

const timings: Record<string, number | string> = {};
const log = (line: string) => console.log(line);

describe.skipIf(skipReason !== null)('lab harness: Debian 12 kernel with dm-multipath under qemu', () => {
  let image: LabImage;
  let vm: LabVm;
  let map: GuestMap;
  let meta: Record<string, unknown> = {};

  beforeAll(async () => {
    image = await ensureLabImage(log);
    timings['image (ensure)'] = `${image.ensureMs} ms (a full build took ${image.manifest.buildSeconds} s)`;
    vm = await bootLabVm({ image, log });
    timings['boot to ready'] = `${vm.bootMs} ms (guest uptime ${vm.guestUptimeAtReady.toFixed(1)} s)`;
    const versions = await vm.runOk("dpkg-query -W -f '${Package} ${Version}\\n' multipath-tools udev open-iscsi");
    meta = { kernel: vm.kernelRelease, kernelPackage: image.manifest.kernelPackageVersion, packages: versions.stdout.trim().split('\n') };
  }, 30 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    console.log(
      `\nlab timings:\n${Object.entries(timings)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}`,
    );
    console.log(`fixtures written under ${fixturesRoot}\n`);
  });

  it('runs commands in the guest with exit codes, separate stderr, stdin and an enforced timeout', async () => {
    expect((await vm.runOk(['uname', '-r'])).stdout.trim()).toBe(image.manifest.kernelVersion);
    expect((await vm.runOk(['multipathd', 'show', 'daemon'])).stdout).toMatch(/idle|running/);
    const r = await vm.run('echo out; echo err >&2; exit 3');
    expect(r).toMatchObject({ stdout: 'out\n', stderr: 'err\n', code: 3, timedOut: false });
    expect((await vm.run(['cat'], { stdin: 'über\n' })).stdout).toBe('über\n');
    const slow = await vm.run(['sleep', '30'], { timeoutMs: 1_000 });
    expect(slow).toMatchObject({ code: null, timedOut: true, stuckPids: [] });
    await expect(vm.runOk('exit 1')).rejects.toThrow(/code 1/);

    const lat: number[] = [];
    for (let i = 0; i < 20; i++) lat.push((await vm.run(['true'])).durationMs);
    lat.sort((a, b) => a - b);
    timings['command round trip (`true`, 20 runs)'] = `median ${lat[10]} ms, max ${lat[19]} ms`;
    const ll = await vm.run(['multipath', '-ll']);
    timings['`multipath -ll` (no maps)'] = `${ll.durationMs} ms`;
  });

  it('builds one scsi_debug multipath map whose three paths are active', async () => {
    const t0 = performance.now();
    map = await createScsiDebugMap(vm);
    timings['scsi_debug map with 3 active paths'] = `${Math.round(performance.now() - t0)} ms`;
    expect(map.paths).toHaveLength(3);
    expect(map.name).toMatch(/^mpath[a-z]+$/);
    const ll = await vm.runOk(['multipath', '-ll']);
    // multipath pads the checker column: `active ready  running` once a path is `faulty`.
    expect(ll.stdout.match(/active ready\s+running/g)).toHaveLength(3);
    expect(ll.stdout).not.toMatch(/\x1b/);

    // The healthy map carries a mounted file system, as a volume in use would.
    await vm.runOk(`set -e; mkfs.ext4 -q /dev/mapper/${map.name}; mkdir -p /mnt/vol; mount /dev/mapper/${map.name} /mnt/vol; echo data > /mnt/vol/f; sync`);
    const timed = await vm.run(['multipath', '-ll']);
    timings['`multipath -ll` (one map)'] = `${timed.durationMs} ms`;
    const captured = await captureMultipathState(vm);
    expect(captured.find((c) => c.file === 'proc-self-mountinfo.txt')?.stdout).toMatch(/ \/mnt\/vol /);
    writeFixtureDir(
      join(fixturesRoot, 'healthy'),
      'healthy',
      'scsi_debug (add_host=3, vpd_use_hostno=0): one map, three paths active ready running, ext4 mounted at /mnt/vol; user_friendly_names yes, find_multipaths no',
      captured,
      { ...meta, map },
    );
  });

  it('fails one path: the map keeps two active paths and stays mounted and readable', async () => {
    const [dead, ...alive] = map.paths;
    await failPaths(vm, [dead!]);
    // The claim is the steady state: once multipathd has settled, the other two are active.
    await waitUntilActive(vm, alive);
    const states = await pathStates(vm);
    expect(states.get(dead!)).toMatchObject({ dm: 'failed', checker: 'faulty', dev: 'offline' });
    for (const p of alive) expect(states.get(p)).toMatchObject({ dm: 'active', checker: 'ready', dev: 'running' });
    const ll = await vm.runOk(['multipath', '-ll']);
    expect(ll.stdout.match(/failed faulty offline/g), ll.stdout).toHaveLength(1);
    expect(ll.stdout.match(/active ready\s+running/g), ll.stdout).toHaveLength(2);
    await vm.runOk(`dd if=/dev/mapper/${map.name} of=/dev/null count=1 bs=1M iflag=direct`, { timeoutMs: 20_000 });
    writeFixtureDir(
      join(fixturesRoot, 'one-path-failed'),
      'one-path-failed',
      `scsi_debug map ${map.name}: ${dead} offline (failed faulty offline), two paths active; still mounted at /mnt/vol and readable. A map that must NOT be cleaned.`,
      await captureMultipathState(vm),
      { ...meta, map, failedPaths: [dead] },
    );
  });

  it('fails every path: each shows failed faulty and the read probe fails', async () => {
    await vm.runOk('umount /mnt/vol');
    await failPaths(vm, map.paths);
    const ll = await vm.runOk(['multipath', '-ll']);
    expect(ll.stdout.match(/failed faulty offline/g), ll.stdout).toHaveLength(3);
    expect(ll.stdout).not.toMatch(/active ready/);
    const probe = await vm.run(`dd if=/dev/mapper/${map.name} of=/dev/null count=1 bs=1M iflag=direct`, { timeoutMs: 20_000 });
    timings['read probe on the dead map'] = `${probe.durationMs} ms, code ${probe.code}, timedOut ${probe.timedOut}`;
    expect(probe.code).not.toBe(0);
    const captured = await captureMultipathState(vm);
    captured.push({
      file: 'dd-probe.txt',
      command: `dd if=/dev/mapper/${map.name} of=/dev/null count=1 bs=1M iflag=direct`,
      code: probe.code,
      stdout: probe.stderr,
    });
    writeFixtureDir(
      join(fixturesRoot, 'all-paths-failed'),
      'all-paths-failed',
      `scsi_debug map ${map.name}: all three paths offline (failed faulty offline), unmounted, no holders; features='0' so reads fail at once (dd-probe.txt is dd's stderr). The residual map the runbook must clean.`,
      captured,
      { ...meta, map, failedPaths: map.paths },
    );
  });

  it('flushes the dead scsi_debug map with multipath -f and deletes its disks', async () => {
    await vm.runOk(['multipath', '-f', map.name], { timeoutMs: 30_000 });
    await vm.runOk(map.paths.map((p) => `echo 1 > /sys/block/${p}/device/delete`).join('\n'));
    await vm.runOk('modprobe -r scsi_debug; udevadm settle');
    expect(await listMaps(vm)).toEqual([]);
    expect((await vm.run('ls /dev/disk/by-id/ | grep -c scsi_debug')).stdout.trim()).toBe('0');
  });

  it('iSCSI: a LUN removed on the target leaves its map failed faulty running with queued I/O', async () => {
    const t0 = performance.now();
    const luns = await createIscsiLab(vm);
    timings['iSCSI target + login + 2 maps ready'] = `${Math.round(performance.now() - t0)} ms`;
    const [healthy, doomed] = luns;
    expect(healthy!.map.paths).toHaveLength(2);
    await vm.runOk(`set -e; mkfs.ext4 -q /dev/mapper/${healthy!.map.name}; mkdir -p /mnt/healthy; mount /dev/mapper/${healthy!.map.name} /mnt/healthy`);
    const features = await vm.runOk(['dmsetup', 'table', doomed!.map.name]);
    const t1 = performance.now();
    await removeLun(vm, doomed!.lun);
    await waitInGuest(
      vm,
      `both paths of ${doomed!.map.name} failed faulty`,
      ['multipathd', 'show', 'paths', 'format', '%d %t %T %o'],
      (out) => doomed!.map.paths.every((p) => new RegExp(`^${p}\\s+failed\\s+faulty`, 'm').test(out)),
      { timeoutMs: 90_000 },
    );
    timings['LUN removed -> both paths failed faulty'] = `${Math.round(performance.now() - t1)} ms`;
    // What holds such a map open in the field is a reader stuck on its queued I/O: udev's blkid
    // probe (seen in most runs), an application. udev does not always get there before the paths
    // fail (then `multipath -f` simply works and this test would prove nothing), so start one.
    await vm.runOk(`setsid dd if=/dev/mapper/${doomed!.map.name} of=/dev/null bs=4k count=1 iflag=direct </dev/null >/dev/null 2>&1 &`);
    await waitInGuest(
      vm,
      `a reader stuck in D state on ${doomed!.map.name}`,
      ['ps', '-eo', 'stat,args'],
      (out) => out.split('\n').some((l) => /^D/.test(l) && l.includes(`dd if=/dev/mapper/${doomed!.map.name}`)),
      { timeoutMs: 30_000 },
    );
    const ll = await vm.runOk(['multipath', '-ll']);
    const captured = await captureMultipathState(vm);
    captured.push(await captureOne(vm, 'ps-d-state.txt', "ps -eo pid,stat,wchan:32,args | awk 'NR==1 || $2 ~ /^D/'"));
    const flush = await vm.run(['multipath', '-f', doomed!.map.name], { timeoutMs: 30_000 });
    captured.push({
      file: 'multipath-f-before-release.txt',
      command: `multipath -f ${doomed!.map.name}`,
      code: flush.code,
      stdout: flush.stdout + flush.stderr,
    });
    writeFixtureDir(
      join(fixturesRoot, 'iscsi-lun-removed'),
      'iscsi-lun-removed',
      `LIO iSCSI target, two portals, open-iscsi on both. LUN ${doomed!.lun} (${doomed!.map.name}) deleted from the TPG under a live, unmounted map: both paths failed faulty running, queue_if_no_path. LUN ${healthy!.lun} (${healthy!.map.name}) healthy and mounted at /mnt/healthy: must not be touched. multipath-f-before-release.txt is what multipath -f said before the queue was released.`,
      captured,
      { ...meta, healthy, removed: doomed, tableBefore: features.stdout.trim() },
    );
    expect(features.stdout).toMatch(/queue_if_no_path/);
    expect(ll.stdout).toMatch(/failed faulty running/);
    // Held by the stuck reader, the map cannot be flushed until its queue is released.
    expect(flush.code).not.toBe(0);
    expect(flush.stdout + flush.stderr).toMatch(/map in use/);

    // Releasing the queue lets stuck openers finish; then the flush succeeds.
    await vm.runOk(['dmsetup', 'message', doomed!.map.name, '0', 'fail_if_no_path']);
    await waitInGuest(
      vm,
      `open count of ${doomed!.map.name} to drop to 0`,
      ['dmsetup', 'info', '-c', '--noheadings', '-o', 'open', doomed!.map.name],
      (out) => out.trim() === '0',
      { timeoutMs: 60_000 },
    );
    await vm.runOk(['multipath', '-f', doomed!.map.name], { timeoutMs: 30_000 });
    const after = await listMaps(vm);
    expect(after.map((m) => m.name)).toEqual([healthy!.map.name]);
    expect((await vm.runOk(['findmnt', '-n', '-o', 'SOURCE', '/mnt/healthy'])).stdout.trim()).toBe(`/dev/mapper/${healthy!.map.name}`);
  });
});

async function captureOne(vm: LabVm, file: string, cmd: string) {
  const r = await vm.run(cmd, { timeoutMs: 30_000 });
  return { file, command: cmd, code: r.code, stdout: r.stdout };
}
