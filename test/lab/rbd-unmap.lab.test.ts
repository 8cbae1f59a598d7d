// rbd-stale-mapping on a real kernel RBD client: Debian 12's kernel under qemu maps images of a
// real one-node Ceph (test/support/ceph.ts) that runs on this machine, bound to a veth address of
// its own (lab-link.ts) which the guest reaches through qemu's user-mode networking.
//
//   kube/csi-vol-stale  mapped in the guest as a ceph-csi node would have it: staged under the
//                       kubelet's plugins/.../globalmount and bind-mounted into the pod directory
//                       of a pod that no longer runs on the node (the stale mapping of rbd-stale-
//                       mapping, docs/safety.md). The kernel client's watch keeps the image "still being used".
//   kube/csi-vol-live   mapped and mounted into the pod directory of a pod that still runs there.
//
// The real runbook code runs on this side: the cluster half (`rbd`, `rados`, `ceph` against the
// test Ceph) finds the kernel client's watch and hands the node half to the watcher's node; the
// node half acts on the guest through the lab command channel; the cluster half, run again, sees
// the watch gone. The live image is refused and left mapped and mounted.
// It also captures what a node with krbd really prints (showmapped, unmap errors, mountinfo):
// LAB_WRITE_FIXTURES=1 writes them to test/fixtures/ceph/krbd/ (commit them).
import { mkdtemp, rm } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RbdStaleMappingJob, RbdUnmapJob } from '../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../src/core/catalogue/result.ts';
import type { Verification } from '../../workers/engine/runbook.ts';
import { RefusedError } from '../../src/core/errors.ts';
import { createRealHost } from '../../workers/host/real-host.ts';
import { createRbdStaleMapping } from '../../workers/runbooks/rbd-stale-mapping/handler.ts';
import { InMemoryNodeJobSink } from '../../workers/runbooks/rbd-stale-mapping/node-job-sink.ts';
import { InMemoryRbdLookups } from '../../workers/runbooks/rbd-stale-mapping/rbd-lookups.ts';
import { parseListWatchers } from '../../workers/runbooks/rbd-stale-mapping/watchers.ts';
import { createRbdUnmap } from '../../workers/runbooks/rbd-unmap/handler.ts';
import { InMemoryNodePods } from '../../workers/runbooks/rbd-unmap/node-pods.ts';
import { isBusy, isNotMapped } from '../../workers/runbooks/rbd-unmap/unmap-error.ts';
import { parseMountinfo } from '../../workers/host/mountinfo.ts';
import { parseShowmappedJson, parseShowmappedText } from '../../workers/runbooks/rbd-unmap/showmapped.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import { cephUnavailable, startCeph, type TestCeph } from '../support/ceph.ts';
import { writeFixtureDir, type CapturedFile } from './capture.ts';
import { guestHost, withoutRbdCli } from './guest-host.ts';
import { labSkipReason } from './image.ts';
import { createLabLink, type LabLink } from './lab-link.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason() ?? cephUnavailable() ?? null;
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (rbd): ${skipReason} ***\n`);

const log = (line: string) => console.log(line);
const fixturesDir =
  process.env.LAB_WRITE_FIXTURES === '1'
    ? fileURLToPath(new URL('../fixtures/ceph/krbd/', import.meta.url))
    : join(mkdtempSync(join(tmpdir(), 'volume-medic-lab-fixtures-')), 'krbd');

const STATE_DIR = '/var/lib/volume-medic';
const KUBELET = '/var/lib/kubelet';
const POOL = 'kube';
const STALE = 'csi-vol-stale';
const LIVE = 'csi-vol-live';
const NOCLI = 'csi-vol-nocli';
const GONE_POD_UID = '6f1c3d2e-0b7a-4c55-9e21-8d4f5a6b7c80';
const LIVE_POD_UID = '0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d';
// ceph-csi stages a volume at plugins/.../globalmount/<volume id> and bind-mounts it into the pod.
const staging = (image: string) =>
  `${KUBELET}/plugins/kubernetes.io/csi/rbd.csi.ceph.com/${image.padEnd(64, '0').slice(0, 64)}/globalmount/0001-0009-lab-ceph-0000000000000002-${image}`;
const podMount = (uid: string, pvc: string) => `${KUBELET}/pods/${uid}/volumes/kubernetes.io~csi/${pvc}/mount`;
const timings: Record<string, string> = {};

const ctx = (key: string, mode: Mode = 'enforce'): RunbookContext => ({
  jobId: key,
  attempt: 1,
  mode,
  ranOn: key.startsWith('rbd_') ? 'cluster-worker' : 'lab-node',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

const clusterJob: RbdStaleMappingJob = {
  version: 1,
  runbook: 'rbd-stale-mapping',
  key: 'rbd_kube_csi-vol-stale_lab000000001',
  target: { pool: POOL, image: STALE, pod: { namespace: 'shop', name: 'db-new' }, node: 'worker-new' },
  evidence: [{ source: 'k8s-event', summary: `FailedMount: rbd image ${POOL}/${STALE} is still being used`, raw: {} }],
};

describe.skipIf(skipReason !== null)('rbd-stale-mapping on a real kernel RBD client (Debian 12 kernel, one-node Ceph)', () => {
  let link: LabLink;
  let ceph: TestCeph;
  let vm: LabVm;
  let stateDir: string;
  const stats = { snapshots: 0, commands: 0 };
  // The hand-over starts the node half on the guest at once, as the node agent would pick the
  // job up from its queue; the cluster half meanwhile waits for the watch to leave.
  let nodeRun: Promise<RunbookResult> | undefined;
  const nodeJobs = new (class extends InMemoryNodeJobSink {
    override async enqueue(j: RbdUnmapJob) {
      const r = await super.enqueue(j);
      if (!r.deduplicated) {
        const t = performance.now();
        nodeRun = nodeHalf()(j, ctx(j.key)).finally(() => (timings['node half (enforce)'] = `${Math.round(performance.now() - t)} ms`));
        nodeRun.catch(() => undefined);
      }
      return r;
    }
  })();
  const mapped: Record<string, string> = {};

  const lookups = () =>
    new InMemoryRbdLookups()
      .addNode({ name: 'worker-new', addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], ready: 'True', labels: {} })
      // The guest's connections leave this machine's side of qemu's user-mode NAT from the lab
      // link's address: that is the node's address as Ceph sees it.
      .addNode({ name: 'lab-node', addresses: [{ type: 'InternalIP', address: link.address }], ready: 'True', labels: {} })
      .addPersistentVolume({
        name: 'pvc-stale',
        volumeMode: 'Filesystem',
        rbd: { pool: POOL, image: STALE },
        claim: { namespace: 'shop', name: 'db-data' },
        accessModes: ['ReadWriteOnce'],
      })
      .addClaim({ namespace: 'shop', name: 'db-data', volumeName: 'pvc-stale', accessModes: ['ReadWriteOnce'], phase: 'Bound' })
      .addPod({
        namespace: 'shop',
        name: 'db-new',
        node: 'worker-new',
        phase: 'Pending',
        claims: ['db-data'],
        waiting: [],
      }) as InMemoryRbdLookups;
  const clusterHalf = () =>
    createRbdStaleMapping({
      host: createRealHost(),
      ceph: { conf: ceph.conf },
      lookups: lookups(),
      nodeJobs,
      stateDir,
      policy: { fencing: 'on', watcherGoneTimeoutMs: 5_000, handoffVerifyMs: 120_000 },
    });
  // On lab-node Kubernetes has the pod of the live image, and no longer the stale image's pod.
  const pods = new InMemoryNodePods([
    { namespace: 'shop', name: 'cache-0', uid: LIVE_POD_UID, node: 'lab-node', phase: 'Running', claims: ['cache-data'], waiting: [] },
  ]);
  const nodeHalf = () => createRbdUnmap({ host: guestHost(vm, stats, STATE_DIR), stateDir: STATE_DIR, pods, policy: { busyDelayMs: 500 } });

  const watchers = (image: string): Promise<string[]> => ceph.watchers(POOL, image);

  beforeAll(async () => {
    let t = performance.now();
    link = await createLabLink();
    ceph = await startCeph({ address: link.address, msgrV1: true });
    await ceph.cli('ceph', ['osd', 'pool', 'create', POOL, '8']);
    await ceph.cli('ceph', ['osd', 'pool', 'application', 'enable', POOL, 'rbd']);
    for (const image of [STALE, LIVE, NOCLI]) await ceph.cli('rbd', ['create', `${POOL}/${image}`, '--size', '32', '--image-feature', 'layering']);
    stateDir = await mkdtemp(join(tmpdir(), 'vm-rbd-lab-state-'));
    timings['Ceph on the lab link'] = `${Math.round(performance.now() - t)} ms (${ceph.monHost})`;

    t = performance.now();
    vm = await bootLabVm({ log, userNetwork: true, memoryMiB: 768 });
    timings['boot to ready'] = `${vm.bootMs} ms`;
    t = performance.now();
    await vm.runOk(['tee', '/etc/ceph/ceph.conf'], {
      stdin: ['[global]', `mon host = ${ceph.monHost}`, 'auth cluster required = none', 'auth service required = none', 'auth client required = none', ''].join(
        '\n',
      ),
    });
    await vm.runOk(['modprobe', 'rbd']);
    for (const image of [STALE, LIVE]) {
      const r = await vm.runOk(['rbd', 'map', `${POOL}/${image}`], { timeoutMs: 120_000 });
      mapped[image] = r.stdout.trim();
    }
    await vm.runOk(['udevadm', 'settle', '--timeout=30'], { timeoutMs: 40_000 });
    const s = staging(STALE);
    const p = podMount(GONE_POD_UID, 'pvc-stale');
    const l = podMount(LIVE_POD_UID, 'pvc-live');
    await vm.runOk(
      `set -e
      mkfs.ext4 -q ${mapped[STALE]}; mkdir -p ${s} ${p}; mount ${mapped[STALE]} ${s}; mount --bind ${s} ${p}; echo stale > ${p}/file
      mkfs.ext4 -q ${mapped[LIVE]}; mkdir -p ${l}; mount ${mapped[LIVE]} ${l}; echo live > ${l}/file; sync`,
      { timeoutMs: 120_000 },
    );
    timings['2 images mapped, formatted, mounted'] = `${Math.round(performance.now() - t)} ms`;
    log(`[rbd-lab] mapped ${JSON.stringify(mapped)}; watchers of ${STALE}: ${(await watchers(STALE)).join(', ')}`);
  }, 15 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    await ceph?.stop();
    await link?.remove();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
    console.log(
      `\nrbd lab timings:\n${Object.entries(timings)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n  guest snapshots ${stats.snapshots}, commands ${stats.commands}\n  fixtures under ${fixturesDir}\n`,
    );
  }, 60_000);

  it('captures what a node with kernel RBD prints, and the parsers read it', async () => {
    const captured: CapturedFile[] = [];
    const capture = async (file: string, cmd: readonly string[] | string, stream: 'stdout' | 'stderr' = 'stdout') => {
      const r = await vm.run(cmd, { timeoutMs: 60_000 });
      captured.push({
        file,
        command: typeof cmd === 'string' ? cmd : cmd.join(' '),
        code: r.code,
        ...(stream === 'stdout' && r.stderr.trim() ? { stderr: r.stderr } : {}),
        stdout: r[stream],
      });
      return r;
    };
    const json = await capture('rbd-showmapped.json', ['rbd', 'showmapped', '--format', 'json']);
    const text = await capture('rbd-showmapped.txt', ['rbd', 'showmapped']);
    const listJson = await capture('rbd-device-list.json', ['rbd', 'device', 'list', '--format', 'json']);
    const busy = await capture('rbd-unmap-busy.err', ['rbd', 'unmap', mapped[LIVE]!], 'stderr');
    const byName = await capture('rbd-unmap-busy-by-spec.err', ['rbd', 'unmap', `${POOL}/${LIVE}`], 'stderr');
    const notMapped = await capture('rbd-unmap-not-mapped.err', ['rbd', 'unmap', `${POOL}/no-such-image`], 'stderr');
    const host = await capture('proc-1-mountinfo.txt', ['cat', '/proc/1/mountinfo']);
    // A process in a mount namespace of its own that mounted the live image, as a container would.
    const other = await capture(
      'proc-unshared-mountinfo.txt',
      `set -e; mkdir -p /mnt/ctr; unshare -m --propagation private sh -c 'mount ${mapped[LIVE]} /mnt/ctr && cat /proc/self/mountinfo'`,
    );
    await capture(
      'sys-bus-rbd-devices.txt',
      'grep -H . /sys/bus/rbd/devices/*/client_addr /sys/bus/rbd/devices/*/client_id /sys/bus/rbd/devices/*/pool /sys/bus/rbd/devices/*/name /sys/bus/rbd/devices/*/current_snap',
    );
    await capture('dev-rbd.txt', 'ls -l /dev/rbd* /dev/rbd/*');
    const info = JSON.parse((await ceph.cli('rbd', ['info', '--format', 'json', `${POOL}/${STALE}`])).stdout) as {
      block_name_prefix: string;
    };
    const lw = await ceph.cli('rados', ['-p', POOL, 'listwatchers', `rbd_header.${info.block_name_prefix.slice('rbd_data.'.length)}`]);
    captured.push({
      file: 'rados-listwatchers-krbd.txt',
      command: `rados -p ${POOL} listwatchers rbd_header.<id> (on the Ceph side)`,
      code: 0,
      stdout: lw.stdout,
    });
    const st = await ceph.cli('rbd', ['status', '--format', 'json', `${POOL}/${STALE}`]);
    captured.push({
      file: 'rbd-status-krbd.json',
      command: `rbd status --format json ${POOL}/${STALE} (on the Ceph side)`,
      code: 0,
      stdout: st.stdout,
    });
    const versions = await vm.runOk("dpkg-query -W -f '${Package} ${Version}\\n' ceph-common");
    writeFixtureDir(
      fixturesDir,
      'krbd',
      `Two images of a one-node Ceph mapped by the kernel RBD client: ${STALE} (${mapped[STALE]}) staged under the kubelet's globalmount and bind-mounted into a pod directory, ${LIVE} (${mapped[LIVE]}) mounted into another pod directory and held`,
      captured,
      {
        kernel: vm.kernelRelease,
        packages: versions.stdout.trim().split('\n'),
        source: 'volume-medic lab guest (test/lab/rbd-unmap.lab.test.ts): real kernel RBD client under qemu',
        cluster: 'test/support/ceph.ts (Ceph 16.2.15, one mon, one memstore OSD, auth none) on a lab-link address (test/lab/lab-link.ts)',
      },
    );

    for (const out of [json.stdout, listJson.stdout]) {
      expect(
        parseShowmappedJson(out)
          .map((m) => [m.pool, m.image, m.snap, m.device])
          .sort(),
      ).toEqual(
        [
          [POOL, LIVE, '-', mapped[LIVE]!.replace('/dev/', '')],
          [POOL, STALE, '-', mapped[STALE]!.replace('/dev/', '')],
        ].sort(),
      );
    }
    expect(parseShowmappedText(text.stdout)).toEqual(parseShowmappedJson(json.stdout));
    expect(busy.code).not.toBe(0);
    expect(isBusy(busy.stderr)).toBe(true);
    expect(isBusy(byName.stderr)).toBe(true);
    expect(notMapped.code).not.toBe(0);
    expect(isNotMapped(notMapped.stderr)).toBe(true);
    expect(isBusy(notMapped.stderr)).toBe(false);
    const hostMounts = parseMountinfo(host.stdout);
    expect(
      hostMounts
        .filter((m) => m.source === mapped[STALE])
        .map((m) => m.mountPoint)
        .sort(),
    ).toEqual([podMount(GONE_POD_UID, 'pvc-stale'), staging(STALE)].sort());
    expect(parseMountinfo(other.stdout).some((m) => m.source === mapped[LIVE] && m.mountPoint === '/mnt/ctr')).toBe(true);
    expect(parseListWatchers(lw.stdout).watchers.length).toBe(1);
  }, 300_000);

  it("cluster half: finds the kernel client's watch, hands the node half to the watcher's node, and sees the watch leave", async () => {
    const before = await watchers(STALE);
    expect(before).toHaveLength(1);
    expect(before[0]!.startsWith(`${link.address}:`)).toBe(true);
    const t = performance.now();
    const r = await clusterHalf()(clusterJob, ctx(clusterJob.key));
    timings['cluster half (first run)'] = `${Math.round(performance.now() - t)} ms`;
    log(`[rbd-lab] cluster half ${r.outcome}: ${r.summary}`);
    expect(r.outcome).toBe('succeeded');
    expect((r.verification as Verification).checks.map((c) => c.what)).toContain(`${before[0]} (node lab-node) no longer watches ${POOL}/${STALE}`);
    expect(await watchers(STALE)).toEqual([]);
    expect(nodeJobs.jobs).toHaveLength(1);
    expect(nodeJobs.jobs[0]).toMatchObject({
      runbook: 'rbd-unmap',
      target: { node: 'lab-node', pool: POOL, image: STALE, watcher: before[0] },
      claim: { namespace: 'shop', name: 'db-data' },
    });
    expect(r.commands.some((c) => c.argv.includes('blocklist') && c.argv.includes('add'))).toBe(false);
  }, 120_000);

  it('node half: unmounted the stale kubelet mounts and unmapped the image on the real kernel; the live image is untouched', async () => {
    expect(nodeRun).toBeDefined();
    const r = await nodeRun!;
    log(`[rbd-lab] node half ${r.outcome}: ${r.summary}`);
    log(`[rbd-lab] steps: ${r.steps.map((s) => `${s.id} ${s.status} ${s.durationMs}ms`).join('; ')}`);
    expect(r.outcome).toBe('succeeded');
    expect(r.verification).toMatchObject({ ok: true });
    const dev = mapped[STALE]!.replace('/dev/', '');
    expect(r.steps.map((s) => [s.id, s.status])).toEqual([
      [`umount:${dev}:${podMount(GONE_POD_UID, 'pvc-stale')}`, 'done'],
      [`umount:${dev}:${staging(STALE)}`, 'done'],
      [`unmap:${dev}:${POOL}/${STALE}`, 'done'],
    ]);
    const now = parseShowmappedJson((await vm.runOk(['rbd', 'showmapped', '--format', 'json'])).stdout);
    expect(now.map((m) => m.image)).toEqual([LIVE]);
    expect((await vm.run(['test', '-b', mapped[STALE]!])).code).not.toBe(0);
    expect((await vm.runOk(['cat', `${podMount(LIVE_POD_UID, 'pvc-live')}/file`])).stdout).toBe('live\n');
  }, 300_000);

  it('cluster half again: the watch is gone, the image freed itself, nothing to do', async () => {
    const r = await clusterHalf()({ ...clusterJob, key: 'rbd_kube_csi-vol-stale_lab000000002' }, ctx('rbd_kube_csi-vol-stale_lab000000002'));
    log(`[rbd-lab] cluster half again ${r.outcome}: ${r.summary}`);
    expect(r.outcome).toBe('nothing-to-do');
    expect(nodeJobs.jobs).toHaveLength(1);
  }, 120_000);

  it('node half refuses the image a running pod still uses: mapped, mounted and readable afterwards', async () => {
    const job: RbdUnmapJob = {
      version: 1,
      runbook: 'rbd-unmap',
      key: 'rbdu_kube_csi-vol-live_lab00000001',
      target: { node: 'lab-node', pool: POOL, image: LIVE, watcher: `${link.address}:0/1` },
      claim: { namespace: 'shop', name: 'cache-data' },
      evidence: [{ source: 'api', summary: 'lab', raw: {} }],
    };
    const err = await nodeHalf()(job, ctx(job.key)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    log(`[rbd-lab] live image refused: ${(err as RefusedError).message}`);
    expect((err as Error).message).toMatch(/shop\/cache-0/);
    const now = parseShowmappedJson((await vm.runOk(['rbd', 'showmapped', '--format', 'json'])).stdout);
    expect(now.map((m) => m.image)).toEqual([LIVE]);
    expect((await vm.runOk(['cat', `${podMount(LIVE_POD_UID, 'pvc-live')}/file`])).stdout).toBe('live\n');
    expect(await watchers(LIVE)).toHaveLength(1);
  }, 120_000);

  it("node half on a node without an rbd CLI: the kernel's sysfs record and remove_single_major do the same job", async () => {
    const dev = (await vm.runOk(['rbd', 'map', `${POOL}/${NOCLI}`], { timeoutMs: 120_000 })).stdout.trim();
    const p = podMount(GONE_POD_UID, 'pvc-nocli');
    await vm.runOk(`set -e; udevadm settle --timeout=30; mkfs.ext4 -q ${dev}; mkdir -p ${p}; mount ${dev} ${p}; sync`, {
      timeoutMs: 120_000,
    });
    // The real kernel answers EBUSY to a removal while the device is mounted: what the runbook reads as busy.
    const busy = await vm.run(`echo ${dev.replace('/dev/rbd', '')} > /sys/bus/rbd/remove_single_major`);
    expect(busy.code).not.toBe(0);
    expect(busy.stderr).toMatch(/Device or resource busy/);
    const [watcher] = await watchers(NOCLI);
    const job: RbdUnmapJob = {
      version: 1,
      runbook: 'rbd-unmap',
      key: 'rbdu_kube_csi-vol-nocli_lab0000001',
      target: { node: 'lab-node', pool: POOL, image: NOCLI, watcher: watcher! },
      // The cluster half always names the PVC it found; without one the node half refuses
      // (a pod here still using the image could not be ruled out).
      claim: { namespace: 'shop', name: 'nocli-data' },
      evidence: [{ source: 'api', summary: 'lab', raw: {} }],
    };
    const handler = createRbdUnmap({
      host: withoutRbdCli(guestHost(vm, stats, STATE_DIR)),
      stateDir: STATE_DIR,
      pods,
      policy: { busyDelayMs: 500 },
    });
    const r = await handler(job, ctx(job.key));
    log(`[rbd-lab] without rbd CLI ${r.outcome}: ${r.summary}; ${r.commands.map((c) => c.argv.join(' ')).join(' | ')}`);
    expect(r.outcome).toBe('succeeded');
    expect(r.verification).toMatchObject({ ok: true });
    // The kernel's client_addr (read from sysfs here) is the watcher Ceph lists.
    expect(r.summary).not.toContain('not the watcher');
    const d = dev.replace('/dev/', '');
    expect(r.steps.map((s) => s.id)).toEqual([`umount:${d}:${p}`, `unmap:${d}:${POOL}/${NOCLI}`]);
    expect(r.commands.some((c) => c.argv[0] === 'host:write-sysfs' && c.argv[1] === '/sys/bus/rbd/remove_single_major')).toBe(true);
    expect((await vm.run(['test', '-b', dev])).code).not.toBe(0);
    expect(await watchers(NOCLI)).toEqual([]);
    // The live image is still mapped.
    const left = parseShowmappedJson((await vm.runOk(['rbd', 'showmapped', '--format', 'json'])).stdout).map((m) => m.image);
    expect(left).toContain(LIVE);
    expect(left).not.toContain(NOCLI);
  }, 300_000);
});
