// Issue 46, decision 0008 §4.6 "Lab": the node comes back after a power cycle. What a real
// kernel leaves, what the host half cleans, and what a Ceph blocklist entry does to a new boot.
//
// What is modelled, and why it is honest:
// - The reboot is a real one: the guest powers off (sync, sysrq o) and a second qemu boots the
//   same persistent root disk (vm.ts createGuestDisk: a qcow2 overlay, not -snapshot), so the
//   node keeps what it wrote to disk (open-iscsi's node records with node.startup=automatic,
//   /etc/ceph, the agent's state directory) and loses every piece of kernel state: dm maps,
//   iSCSI sessions, rbd mappings. /proc/sys/kernel/random/boot_id changes.
// - The lab's iSCSI target (LIO) lives in the guest, standing in for the storage array; the
//   array keeps its configuration across the node's reboot, so boot 1 saves it (rtslib
//   saveconfig, on the persistent disk) and boot 2 restores it before the initiator logs in.
//   The guest's PID 1 is not systemd: the test runs what open-iscsi.service runs at boot,
//   `iscsiadm -m node --loginall=automatic`, and re-applies the node's multipath override.
// - Three LUNs: LUN 0 stays; LUN 1 is unmapped by the storage during the outage (the force
//   detach of KEP-2268 ran ControllerUnpublish while the node was off) and LUN 2 only after the
//   node's boot-time login (the storage's unmap racing the node's return). A rebooted node keeps
//   no residue of a LUN removed before its login (nothing to log into: asserted); the residue
//   the host half finds is LUN 2's dead map, made by the boot login itself.
// - No rbd mapping survives a reboot (the kernel client is gone). What survives is Ceph's state.
//   Before the power cycle the node was cut off (NotReady, tainted out of service) with the
//   image still mapped, and the pod that moved away could not map it: the real cluster half of
//   rbd-stale-mapping fenced the watcher (`ceph osd blocklist add <ip>:0/<nonce> 3600`), an
//   entry that names one client instance. Measured here: a fenced instance cannot map another
//   image (the kernel shares one client per cluster) and can again after `rm` of that exact
//   entry; boot 2's kernel client is a new instance (new nonce) and maps while boot 1's entry
//   is still listed. Only a whole-host entry (`<ip>:0/0`, the form of Rook's NetworkFence and
//   of Rook's node-loss docs) fences the new boot: `rbd map` fails until `ceph osd blocklist rm
//   <ip>:0/0`, then maps. volume-medic never adds (or removes) that form.
// - The cluster half is the real out-of-service-taint-release against the fake API server
//   (test/testkit/fake-kube-api.ts) through the cluster worker's real write port, with the real
//   Ceph for `ceph osd blocklist ls/rm` and rbd-stale-mapping's own undo record (kept in memory
//   instead of Redis). The Node carries the taint between two others, boot 2's id and Ready since
//   boot 2 came up; the job names boot 1 as the boot of the taint's first sight. The job store's
//   view of the node half is the results of the runs above, stamped with the boot they ran on.
//   No approval gate: the handler is called as the worker calls it once a job may run (enforce).
//   Before the host half has results for boot 2 it refuses host-not-clean and writes nothing;
//   after them it lifts our entry (housekeeping: it named boot 1's client) and then removes
//   exactly the taint.
// - Ceph sees the guest at the lab link's address (qemu's user-mode NAT), the address this
//   machine's own Ceph tools use too: while a whole-host entry is listed, only monitor commands
//   (`ceph osd blocklist ...`) are run from this side.
//
// LAB_WRITE_FIXTURES=1 writes what was captured to test/fixtures/ceph/blocklist/ (commit them).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { ApiKubeWrites } from '../../src/adapters/kube/api-kube-writes.ts';
import { kubeClients } from '../../src/adapters/kube/kube-config.ts';
import { KubeRest } from '../../src/adapters/kube/rest/transport.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutOfServiceTaintReleaseJob, RbdStaleMappingJob, ResidualMultipathJob, RbdUnmapJob } from '../../src/core/catalogue/jobs.ts';
import { RefusedError } from '../../src/core/errors.ts';
import type { Mode, RunbookResult } from '../../src/core/catalogue/result.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import { ParkedError } from '../../workers/engine/gate.ts';
import { InMemoryAttachedVolumes } from '../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { createRealHost } from '../../workers/host/real-host.ts';
import type { CleanupJobFact } from '../../workers/runbooks/out-of-service-taint-release/facts.ts';
import { createOutOfServiceTaintRelease } from '../../workers/runbooks/out-of-service-taint-release/handler.ts';
import { ourBlocklistOf } from '../../workers/runbooks/out-of-service-taint-release/our-blocklist.ts';
import { parseBlocklistJson, parseBlocklistText } from '../../workers/runbooks/rbd-stale-mapping/blocklist.ts';
import { redisBlocklistUndo } from '../../workers/runbooks/rbd-stale-mapping/blocklist-undo.ts';
import { createCephHost } from '../../workers/runbooks/rbd-stale-mapping/ceph-access.ts';
import { blocklistAddArgv } from '../../workers/runbooks/rbd-stale-mapping/ceph-commands.ts';
import { createRbdStaleMapping } from '../../workers/runbooks/rbd-stale-mapping/handler.ts';
import { InMemoryNodeJobSink } from '../../workers/runbooks/rbd-stale-mapping/node-job-sink.ts';
import { InMemoryRbdLookups } from '../../workers/runbooks/rbd-stale-mapping/rbd-lookups.ts';
import { createRbdUnmap } from '../../workers/runbooks/rbd-unmap/handler.ts';
import { InMemoryNodePods } from '../../workers/runbooks/rbd-unmap/node-pods.ts';
import { parseShowmappedJson } from '../../workers/runbooks/rbd-unmap/showmapped.ts';
import { cephUnavailable, startCeph, type TestCeph } from '../support/ceph.ts';
import { type FakeKubeApi, startFakeKubeApi } from '../testkit/fake-kube-api.ts';

import { writeFixtureDir, type CapturedFile } from './capture.ts';
import { guestHost } from './guest-host.ts';
import { waitInGuest } from './guest-wait.ts';
import { ensureLabImage, labSkipReason } from './image.ts';
import { createIscsiLab, removeLun, type IscsiLun } from './iscsi-scenario.ts';
import { createLabLink, type LabLink } from './lab-link.ts';
import { listMaps, pathStates, settleUdev } from './scsi-debug-scenario.ts';
import { bootLabVm, createGuestDisk, type GuestDisk, type LabVm } from './vm.ts';

const skipReason = labSkipReason() ?? cephUnavailable() ?? null;
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (out-of-service-taint-release): ${skipReason} ***\n`);

const log = (line: string) => console.log(line);
const fixturesDir =
  process.env.LAB_WRITE_FIXTURES === '1'
    ? fileURLToPath(new URL('../fixtures/ceph/blocklist/', import.meta.url))
    : join(mkdtempSync(join(tmpdir(), 'volume-medic-lab-fixtures-')), 'blocklist');

const STATE_DIR = '/var/lib/volume-medic';
const SAVED_TARGET = '/var/lib/vmlab/array-saveconfig.json';
const POOL = 'kube';
/** Mapped in boot 1: the volume the node had when it went down. */
const BEFORE = 'csi-vol-before';
/** Only ever mapped to learn whether a client may map. */
const PROBE = 'csi-vol-probe';
const PROBE2 = 'csi-vol-probe2';
const EXPIRY_S = 3600;
/** How long the Node must have been Ready before its taint may go (OOS_READY_GRACE_SECONDS, 600 s by default; short for the lab). */
const READY_GRACE_S = 20;
const timings: Record<string, string> = {};
const captured: CapturedFile[] = [];

const ctx = (key: string, mode: Mode = 'enforce'): RunbookContext => ({
  jobId: key,
  attempt: 1,
  mode,
  ranOn: 'lab-node',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

const clusterCtx = (key: string): RunbookContext => ({ ...ctx(key), ranOn: 'cluster-worker' });

const NODE = 'lab-node';
/** The taint an operator (or a remediator) put on the node while it was cut off. */
const OOS = {
  key: 'node.kubernetes.io/out-of-service',
  value: 'nodeshutdown',
  effect: 'NoExecute',
  timeAdded: new Date(Date.now() - 15 * 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
};

/** Taints the Node also carries, which the release must leave as they are. */
const UNSCHEDULABLE = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', timeAdded: OOS.timeAdded };
const DEDICATED = { key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' };

/** The pod of the volume moved to worker-new and cannot map it there: the FailedMount rbd-stale-mapping answers. */
const fenceJob: RbdStaleMappingJob = {
  version: 1,
  runbook: 'rbd-stale-mapping',
  key: 'rbd_kube_csi-vol-before_lab00000001',
  target: { pool: POOL, image: BEFORE, pod: { namespace: 'shop', name: 'db-new' }, node: 'worker-new' },
  evidence: [{ source: 'k8s-event', summary: `FailedMount: rbd image ${POOL}/${BEFORE} is still being used`, raw: {} }],
};

const bootId = async (vm: LabVm): Promise<string> => (await vm.runOk(['cat', '/proc/sys/kernel/random/boot_id'])).stdout.trim();

/** The node's multipath override (queue while no path): init.sh rewrites multipath.conf at every boot. */
const queueOverride = (vm: LabVm) => vm.runOk(`printf 'overrides {\\n\\tno_path_retry queue\\n}\\n' >> /etc/multipath.conf && multipathd reconfigure`);

describe.skipIf(skipReason !== null)('the node comes back after a power cycle (Debian 12 kernel, LIO iSCSI, one-node Ceph)', () => {
  let link: LabLink;
  let ceph: TestCeph;
  let disk: GuestDisk;
  let vm: LabVm;
  let boot1 = '';
  let boot2 = '';
  /** The kernel client of boot 1 as Ceph lists its watch: `<ip>:0/<nonce>`. */
  let oldClient = '';
  let luns: IscsiLun[] = [];
  let hostStateDir = '';
  let api: FakeKubeApi;
  /** When boot 2 was up: the Node's Ready lastTransitionTime. */
  let boot2ReadyAt = '';
  /** The job store's view of the node half: the results of boot 2's clean-up jobs, added as they finish. */
  const cleanupStore: CleanupJobFact[] = [];
  // rbd-stale-mapping's undo records (Redis in the cluster worker; a hash in memory here).
  const hashes = new Map<string, string>();
  const undo = redisBlocklistUndo(
    { hget: async (k, f) => hashes.get(`${k}\u0000${f}`) ?? null, hset: async (k, f, v) => hashes.set(`${k}\u0000${f}`, v) },
    'oos-lab',
  );
  const stats = { snapshots: 0, commands: 0 };

  /** Runs cmd in the guest and keeps its output as a fixture: stderr for `*.err`, stdout otherwise. */
  const record = async (file: string, cmd: readonly string[] | string, timeoutMs = 120_000) => {
    const r = await vm.run(cmd, { timeoutMs });
    const err = file.endsWith('.err');
    captured.push({
      file,
      command: typeof cmd === 'string' ? cmd : cmd.join(' '),
      code: r.code,
      ...(!err && r.stderr.trim() ? { stderr: r.stderr } : {}),
      stdout: err ? r.stderr : r.stdout,
    });
    return r;
  };
  const recordCeph = async (file: string, args: ['ceph' | 'rbd' | 'rados', string[]], stream: 'stdout' | 'stderr' = 'stdout') => {
    const r = await ceph.cli(...args);
    captured.push({ file, command: `${args[0]} ${args[1].join(' ')} (on the Ceph side)`, code: 0, stdout: r[stream] });
    return r;
  };
  const blocklisted = async (): Promise<string[]> =>
    parseBlocklistJson((await ceph.cli('ceph', ['osd', 'blocklist', 'ls', '--format', 'json'])).stdout).map((e) => e.addr);
  // The cluster as the cluster worker sees it while the node is cut off: NotReady and tainted out of service.
  const staleMapping = () =>
    createRbdStaleMapping({
      host: createRealHost(),
      ceph: { conf: ceph.conf },
      lookups: new InMemoryRbdLookups()
        .addNode({ name: 'worker-new', addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], ready: 'True', labels: {} })
        .addNode({
          name: NODE,
          addresses: [{ type: 'InternalIP', address: link.address }],
          ready: 'Unknown',
          readySince: OOS.timeAdded,
          taints: [OOS],
          labels: {},
        })
        .addPersistentVolume({
          name: 'pvc-before',
          volumeMode: 'Filesystem',
          rbd: { pool: POOL, image: BEFORE },
          claim: { namespace: 'shop', name: 'db-data' },
          accessModes: ['ReadWriteOnce'],
        })
        .addClaim({ namespace: 'shop', name: 'db-data', volumeName: 'pvc-before', accessModes: ['ReadWriteOnce'], phase: 'Bound' })
        .addPod({ namespace: 'shop', name: 'db-new', node: 'worker-new', phase: 'Pending', claims: ['db-data'], waiting: [] }) as InMemoryRbdLookups,
      nodeJobs: new InMemoryNodeJobSink(),
      blocklistUndo: undo,
      stateDir: hostStateDir,
      policy: { fencing: 'on', blocklistExpirySeconds: EXPIRY_S, watcherGoneTimeoutMs: 30_000, handoffVerifyMs: 0 },
    });
  /** The Node as the API server has it once boot 2 is up: Ready, the new boot id, the taint between two others. */
  const seedNode = () => {
    api.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } },
      spec: { taints: [UNSCHEDULABLE, OOS, DEDICATED] },
      status: {
        nodeInfo: { bootID: boot2 },
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: boot2ReadyAt }],
        addresses: [{ type: 'InternalIP', address: link.address }],
      },
    });
    api.put({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: NODE, namespace: 'kube-node-lease' },
      spec: { renewTime: new Date().toISOString() },
    });
  };
  const taintRelease = () => {
    const rest = new KubeRest({ server: api.url, token: () => 'fake-token' });
    const cephHost = createCephHost(createRealHost(), { conf: ceph.conf });
    const clients = kubeClients(api.kubeConfig());
    return createOutOfServiceTaintRelease({
      host: cephHost,
      // The cluster worker's real write port (client-node), as clusterKube builds it.
      kube: new ApiKubeWrites({ component: 'cluster-worker', core: clients.core, events: clients.events }),
      get: (path, query) => rest.get(path, query),
      cleanupJobs: async () => [...cleanupStore],
      ourBlocklist: ourBlocklistOf(undo, cephHost, () => new Date()),
      readyGraceSeconds: READY_GRACE_S,
      stateDir: hostStateDir,
      fenceTimeoutMs: 0,
    });
  };
  const releaseJob = (n: number): OutOfServiceTaintReleaseJob => ({
    version: 1,
    runbook: 'out-of-service-taint-release',
    key: `oos_lab-node_00000000000${n}`,
    target: { node: NODE },
    taint: { timeAdded: OOS.timeAdded, bootIdAtFirstSight: boot1, firstSeenAt: OOS.timeAdded },
    evidence: [{ source: 'k8s-watch', summary: `Node ${NODE} Ready while tainted out-of-service`, raw: {} }],
  });
  const mappedImages = async (): Promise<string[]> =>
    parseShowmappedJson((await vm.runOk(['rbd', 'showmapped', '--format', 'json'])).stdout).map((m) => m.image);

  beforeAll(async () => {
    const t = performance.now();
    link = await createLabLink();
    ceph = await startCeph({ address: link.address, msgrV1: true });
    await ceph.cli('ceph', ['osd', 'pool', 'create', POOL, '8']);
    await ceph.cli('ceph', ['osd', 'pool', 'application', 'enable', POOL, 'rbd']);
    for (const image of [BEFORE, PROBE, PROBE2]) await ceph.cli('rbd', ['create', `${POOL}/${image}`, '--size', '32', '--image-feature', 'layering']);
    timings['Ceph on the lab link'] = `${Math.round(performance.now() - t)} ms (${ceph.monHost})`;
    hostStateDir = mkdtempSync(join(tmpdir(), 'vm-oos-lab-state-'));
    api = await startFakeKubeApi();
    // Neither metal3 nor csi-addons here: their lists answer 404 (not installed).
    api.absentGroups.add('infrastructure.cluster.x-k8s.io');
    api.absentGroups.add('csiaddons.openshift.io');
    disk = createGuestDisk(await ensureLabImage(log));
    vm = await bootLabVm({ log, userNetwork: true, memoryMiB: 768, disk });
    timings['boot 1 to ready'] = `${vm.bootMs} ms`;
  }, 15 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    await api?.close();
    await ceph?.stop();
    await link?.remove();
    disk?.remove();
    if (hostStateDir) rmSync(hostStateDir, { recursive: true, force: true });
    console.log(
      `\nout-of-service lab timings:\n${Object.entries(timings)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n  guest snapshots ${stats.snapshots}, commands ${stats.commands}\n  fixtures under ${fixturesDir}\n`,
    );
  }, 60_000);

  it('boot 1: three iSCSI LUNs logged in at boot and an rbd image mapped; rbd-stale-mapping fences that kernel client, which then cannot map another image', async () => {
    const t = performance.now();
    boot1 = await bootId(vm);
    await queueOverride(vm);
    luns = await createIscsiLab(vm, { luns: 3, sizeMb: 32 });
    // The node's records say to log in at boot; the array's configuration is saved where boot 2 finds it.
    await vm.runOk(
      `set -e
      iscsiadm -m node -o update -n node.startup -v automatic
      python3 -c "from rtslib_fb import RTSRoot; RTSRoot().save_to_file('${SAVED_TARGET}')"`,
    );
    await vm.runOk(['tee', '/etc/ceph/ceph.conf'], {
      stdin: ['[global]', `mon host = ${ceph.monHost}`, 'auth cluster required = none', 'auth service required = none', 'auth client required = none', ''].join(
        '\n',
      ),
    });
    await vm.runOk(['modprobe', 'rbd']);
    const dev = (await vm.runOk(['rbd', 'map', `${POOL}/${BEFORE}`], { timeoutMs: 120_000 })).stdout.trim();
    [oldClient] = (await ceph.watchers(POOL, BEFORE)) as [string];
    const sysfsAddr = (await vm.runOk('cat /sys/bus/rbd/devices/*/client_addr')).stdout.trim();
    log(
      `[oos-lab] boot 1 ${boot1}: ${luns.map((l) => `LUN ${l.lun} ${l.map.name}`).join(', ')}; ${BEFORE} on ${dev}, client ${oldClient} (sysfs ${sysfsAddr})`,
    );
    expect(oldClient).toMatch(new RegExp(`^${link.address.replace(/\./g, '\\.')}:0/\\d+$`));
    expect(sysfsAddr).toBe(oldClient);

    // The node is cut off (NotReady, tainted out of service) while its kernel still maps the
    // image; the pod moved to worker-new cannot map it ("still being used"): the real cluster
    // half of rbd-stale-mapping fences the watcher, the node's one client instance.
    const fence = await staleMapping()(fenceJob, clusterCtx(fenceJob.key));
    log(`[oos-lab] rbd-stale-mapping ${fence.outcome}: ${fence.summary}`);
    expect(fence.outcome).toBe('succeeded');
    const add = fence.commands.find((c) => c.argv.includes('blocklist') && c.argv.includes('add'));
    expect(add?.argv.slice(add.argv.indexOf('osd'))).toEqual(blocklistAddArgv(oldClient, EXPIRY_S).slice(1));
    captured.push({
      file: 'ceph-osd-blocklist-add-instance.err',
      command: `${blocklistAddArgv(oldClient, EXPIRY_S).join(' ')} (rbd-stale-mapping)`,
      code: add!.exitCode,
      stdout: add!.stderr,
    });
    expect(await blocklisted()).toEqual([oldClient]);
    expect((await undo.forNode(NODE, new Date())).map((r) => [r.address, r.job])).toEqual([[oldClient, fenceJob.key]]);
    await recordCeph('ceph-osd-blocklist-ls-instance.json', ['ceph', ['osd', 'blocklist', 'ls', '--format', 'json']]);
    await recordCeph('ceph-osd-blocklist-ls-instance.txt', ['ceph', ['osd', 'blocklist', 'ls']]);
    // The kernel keeps one client per cluster: a new mapping goes through the fenced instance.
    const denied = await record('rbd-map-fenced-instance.err', ['rbd', 'map', `${POOL}/${PROBE}`]);
    log(`[oos-lab] boot 1 map through the fenced client: code ${denied.code}: ${denied.stderr.trim()}`);
    await record('dmesg-fenced-instance.txt', "dmesg | grep -E 'libceph|rbd' | tail -n 20");
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/\(108\) Cannot send after transport endpoint shutdown/);
    expect(await mappedImages()).toEqual([BEFORE]);
    timings['boot 1: iSCSI, rbd map, fence'] = `${Math.round(performance.now() - t)} ms`;
  }, 600_000);

  it('boot 2 after a power cycle: a new boot id, no map, session or rbd mapping left in the kernel; the disk kept its records', async () => {
    await vm.shutdown();
    vm = await bootLabVm({ log, userNetwork: true, memoryMiB: 768, disk });
    timings['boot 2 to ready'] = `${vm.bootMs} ms`;
    boot2 = await bootId(vm);
    boot2ReadyAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    log(`[oos-lab] boot 2 ${boot2} (boot 1 ${boot1})`);
    expect(boot2).toMatch(/^[0-9a-f-]{36}$/);
    expect(boot2).not.toBe(boot1);
    await vm.runOk(['modprobe', 'rbd']);
    expect(await mappedImages()).toEqual([]);
    expect((await vm.runOk(['dmsetup', 'ls', '--target', 'multipath'])).stdout).toMatch(/No devices found|^\s*$/);
    expect((await vm.run(['iscsiadm', '-m', 'session'])).code).not.toBe(0);
    expect((await vm.runOk('grep -rh "^node.startup" /etc/iscsi/nodes | sort -u')).stdout.trim()).toBe('node.startup = automatic');
    expect((await vm.runOk(['test', '-s', SAVED_TARGET])).code).toBe(0);
    // Ceph still fences boot 1's client: the entry outlives the node's reboot.
    expect(await blocklisted()).toContain(oldClient);
  }, 600_000);

  it('boot-time login: the LUN removed during the outage leaves nothing; the one removed after the login is a dead map', async () => {
    const t = performance.now();
    const [lun0, lun1, lun2] = luns as [IscsiLun, IscsiLun, IscsiLun];
    await queueOverride(vm);
    // The array: its portals and saved configuration, less the LUN it unmapped while the node was off.
    await vm.runOk(
      `set -e
      modprobe -a dummy iscsi_target_mod target_core_file iscsi_tcp
      ip link add vmlab0 type dummy 2>/dev/null || true
      ip link set vmlab0 up
      ip addr replace 192.168.77.1/24 dev vmlab0
      ip addr replace 192.168.77.2/24 dev vmlab0
      python3 -c "from rtslib_fb import RTSRoot; RTSRoot().restore_from_file('${SAVED_TARGET}')"`,
      { timeoutMs: 60_000 },
    );
    await removeLun(vm, lun1.lun);
    // What open-iscsi.service does at boot.
    await vm.runOk('mkdir -p /run/lock/iscsi; pgrep -x iscsid >/dev/null || iscsid; iscsiadm -m node --loginall=automatic', { timeoutMs: 60_000 });
    await settleUdev(vm);
    // The boot login's maps: two, each with two active paths (LUN 1 has nothing to log into).
    const deadline = Date.now() + 120_000;
    for (;;) {
      const [now, states] = [await listMaps(vm), await pathStates(vm)];
      if (now.length === 2 && now.every((m) => m.paths.length === 2 && m.paths.every((p) => states.get(p)?.dm === 'active'))) break;
      if (Date.now() > deadline) throw new Error(`boot login maps not ready: ${(await vm.run('multipath -ll; lsscsi')).stdout}`);
      await new Promise((res) => setTimeout(res, 1000));
    }
    const maps = await listMaps(vm);
    log(`[oos-lab] boot 2 maps: ${maps.map((m) => `${m.name} ${m.dm} ${m.paths.join(',')}`).join('; ')}`);
    // user_friendly_names come from /etc/multipath/bindings on the persistent disk: the same names again.
    expect(maps.map((m) => m.name).sort()).toEqual([lun0.map.name, lun2.map.name].sort());
    expect(maps.map((m) => m.uuid)).not.toContain(lun1.map.uuid);
    await removeLun(vm, lun2.lun);
    const dead = maps.find((m) => m.name === lun2.map.name)!;
    await waitInGuest(
      vm,
      `both paths of ${dead.name} failed faulty`,
      ['multipathd', 'show', 'paths', 'format', '%d %t %T %o'],
      (out) => dead.paths.every((p) => new RegExp(`^${p}\\s+failed\\s+faulty`, 'm').test(out)),
      { timeoutMs: 90_000 },
    );
    const states = await pathStates(vm);
    log(`[oos-lab] after LUN 2 left: ${[...states].map(([p, s]) => `${p} ${s.dm}/${s.checker}`).join(', ')}`);
    timings['boot 2: array restored, boot login, LUN 2 removed'] = `${Math.round(performance.now() - t)} ms`;
  }, 600_000);

  it("Ceph: boot 1's instance entry does not fence boot 2's new client; an instance entry of the new client and a whole-host entry do, until `ceph osd blocklist rm`", async () => {
    // Boot 2's kernel client is a new instance: the old entry is still listed and the map works.
    expect(await blocklisted()).toContain(oldClient);
    const allowed = await record('rbd-map-new-boot-old-instance-listed.txt', ['rbd', 'map', `${POOL}/${PROBE}`]);
    expect(allowed.code).toBe(0);
    const newClient = (await vm.runOk('cat /sys/bus/rbd/devices/*/client_addr')).stdout.trim();
    log(`[oos-lab] boot 2 client ${newClient}, boot 1 client ${oldClient} (still blocklisted)`);
    expect(newClient).not.toBe(oldClient);
    expect(newClient.split(':')[0]).toBe(oldClient.split(':')[0]);
    // The new client fenced by its instance (kept alive by the PROBE mapping) cannot map more;
    // `rm` of that exact entry lets it map again.
    await ceph.cli('ceph', blocklistAddArgv(newClient, EXPIRY_S).slice(1));
    const fenced = await record('rbd-map-fenced-new-instance.err', ['rbd', 'map', `${POOL}/${PROBE2}`]);
    expect(fenced.code).not.toBe(0);
    expect(fenced.stderr).toMatch(/\(108\) Cannot send after transport endpoint shutdown/);
    await recordCeph('ceph-osd-blocklist-rm-instance.err', ['ceph', ['osd', 'blocklist', 'rm', newClient]], 'stderr');
    const again = await record('rbd-map-instance-after-rm.txt', ['rbd', 'map', `${POOL}/${PROBE2}`]);
    log(`[oos-lab] boot 2 map after rm of the new instance: code ${again.code}: ${again.stdout.trim()} ${again.stderr.trim()}`);
    expect(again.code).toBe(0);
    await vm.runOk(['rbd', 'unmap', `${POOL}/${PROBE2}`]);
    await vm.runOk(['rbd', 'unmap', `${POOL}/${PROBE}`]);
    expect(await mappedImages()).toEqual([]);

    // The whole-host form fences every client of the address, the rebooted kernel's too.
    const host = `${link.address}:0/0`;
    await recordCeph('ceph-osd-blocklist-add-host.err', ['ceph', ['osd', 'blocklist', 'add', host, String(EXPIRY_S)]], 'stderr');
    await recordCeph('ceph-osd-blocklist-ls-instance-and-host.json', ['ceph', ['osd', 'blocklist', 'ls', '--format', 'json']]);
    await recordCeph('ceph-osd-blocklist-ls-instance-and-host.txt', ['ceph', ['osd', 'blocklist', 'ls']]);
    const denied = await record('rbd-map-host-blocklisted.err', ['rbd', 'map', `${POOL}/${PROBE}`]);
    log(`[oos-lab] boot 2 map with ${host} listed: code ${denied.code}: ${denied.stderr.trim()}`);
    await record('dmesg-host-blocklisted.txt', "dmesg | grep -E 'libceph|rbd' | tail -n 20");
    expect(denied.code).not.toBe(0);
    expect(await mappedImages()).toEqual([]);
    await recordCeph('ceph-osd-blocklist-rm-host.err', ['ceph', ['osd', 'blocklist', 'rm', host]], 'stderr');
    const after = await record('rbd-map-after-rm.txt', ['rbd', 'map', `${POOL}/${PROBE}`]);
    log(`[oos-lab] boot 2 map after rm: code ${after.code}: ${after.stdout.trim()} ${after.stderr.trim()}`);
    expect(after.code).toBe(0);
    await vm.runOk(['rbd', 'unmap', `${POOL}/${PROBE}`]);
    expect(await blocklisted()).toEqual([oldClient]);

    const json = captured.find((c) => c.file === 'ceph-osd-blocklist-ls-instance-and-host.json')!;
    const text = captured.find((c) => c.file === 'ceph-osd-blocklist-ls-instance-and-host.txt')!;
    expect(
      parseBlocklistJson(json.stdout)
        .map((e) => e.addr)
        .sort(),
    ).toEqual([host, oldClient].sort());
    expect(parseBlocklistText(text.stdout)).toEqual(parseBlocklistJson(json.stdout));
    const versions = await vm.runOk("dpkg-query -W -f '${Package} ${Version}\\n' ceph-common");
    writeFixtureDir(
      fixturesDir,
      'blocklist',
      `A kernel RBD client fenced the way rbd-stale-mapping fences (${oldClient}, its instance), before and after the node's reboot, and the same node fenced by host (${host}), before and after \`ceph osd blocklist rm\``,
      captured,
      {
        kernel: vm.kernelRelease,
        packages: versions.stdout.trim().split('\n'),
        bootIds: { boot1, boot2 },
        source: 'volume-medic lab guest (test/lab/out-of-service-taint-release.lab.test.ts): real kernel RBD client under qemu, rebooted on a persistent disk',
        cluster: 'test/support/ceph.ts (Ceph 16.2.15, one mon, one memstore OSD, auth none) on a lab-link address (test/lab/lab-link.ts)',
      },
    );
  }, 600_000);

  it('out-of-service-taint-release refuses host-not-clean while no clean-up of boot 2 is known, and writes nothing', async () => {
    seedNode();
    const err = await taintRelease()(releaseJob(1), clusterCtx(releaseJob(1).key)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    const reasons = [...(err as RefusedError).reasons];
    log(`[oos-lab] taint release before the host half: ${reasons.join(' | ')}`);
    expect(reasons).toEqual([expect.stringMatching(new RegExp(`^host-not-clean: no residual-multipath-cleanup job of boot ${boot2}`))]);
    expect(api.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(await blocklisted()).toEqual([oldClient]);
  }, 120_000);

  it('host half on boot 2: residual-multipath-cleanup removes the dead map the boot login made; rbd-unmap finds nothing of boot 1 mapped', async () => {
    const residual = createResidualMultipathCleanup({
      host: guestHost(vm, stats, STATE_DIR),
      stateDir: STATE_DIR,
      attached: new InMemoryAttachedVolumes({}),
      policy: { probeTimeoutMs: 3_000, allDeadGraceMs: 3_000 },
    });
    const job: ResidualMultipathJob = {
      version: 1,
      key: 'residual_oos_lab_1',
      runbook: 'residual-multipath-cleanup',
      target: { node: NODE },
      evidence: [{ source: 'api', summary: 'lab: out-of-service taint, node back with a new boot id', raw: {} }],
    };
    const t = performance.now();
    let r: RunbookResult | undefined;
    for (let parked = 0; !r; parked++) {
      try {
        r = await residual(job, ctx(job.key));
      } catch (err) {
        if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || parked >= 3) throw err;
        await new Promise((res) => setTimeout(res, Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 100));
      }
    }
    timings['host half: residual-multipath-cleanup'] = `${Math.round(performance.now() - t)} ms`;
    log(`[oos-lab] residual ${r.outcome}: ${r.summary}`);
    const [lun0, , lun2] = luns as [IscsiLun, IscsiLun, IscsiLun];
    expect(r.outcome).toBe('succeeded');
    expect(r.summary).toContain(lun2.map.name);
    expect((await listMaps(vm)).map((m) => m.name)).toEqual([lun0.map.name]);
    // The node agent stamps its jobs with the boot it runs.
    const ranOnBoot = await bootId(vm);
    cleanupStore.push({
      runbook: 'residual-multipath-cleanup',
      id: job.key,
      state: 'completed',
      bootId: ranOnBoot,
      finishedAt: new Date().toISOString(),
      outcome: r.outcome,
      summary: r.summary,
    });
    // The probe the runbook abandoned on the queueing map left with the map's queue.
    expect((await vm.run(`ps -eo stat,args | awk '$1 ~ /^D/'`)).stdout.trim()).toBe('');

    const unmap = createRbdUnmap({ host: guestHost(vm, stats, STATE_DIR), stateDir: STATE_DIR, pods: new InMemoryNodePods([]) });
    const unmapJob: RbdUnmapJob = {
      version: 1,
      runbook: 'rbd-unmap',
      key: 'rbdu_oos_lab_1',
      target: { node: NODE, pool: POOL, image: BEFORE, watcher: oldClient },
      claim: { namespace: 'shop', name: 'db-data' },
      evidence: [{ source: 'api', summary: 'lab', raw: {} }],
    };
    const u = await unmap(unmapJob, ctx(unmapJob.key));
    log(`[oos-lab] rbd-unmap ${u.outcome}: ${u.summary}`);
    expect(u.outcome).toBe('nothing-to-do');
    cleanupStore.push({
      runbook: 'rbd-unmap',
      id: unmapJob.key,
      state: 'completed',
      bootId: boot2,
      finishedAt: new Date().toISOString(),
      outcome: u.outcome,
      summary: u.summary,
    });
  }, 600_000);

  it('after the host half: blocklist-rm of our own entry, then remove-taint; the Node loses exactly that taint and the guest maps', async () => {
    seedNode();
    const t = performance.now();
    const r = await taintRelease()(releaseJob(2), clusterCtx(releaseJob(2).key));
    timings['cluster half: out-of-service-taint-release'] = `${Math.round(performance.now() - t)} ms`;
    log(`[oos-lab] taint release ${r.outcome}: ${r.summary}`);
    log(`[oos-lab] commands: ${r.commands.map((c) => c.argv.slice(0, 5).join(' ')).join(' | ')}`);
    expect(r.outcome).toBe('succeeded');
    expect(r.steps.map((s) => [s.id, s.status])).toEqual([
      [`blocklist-rm:${oldClient}`, 'done'],
      [`remove-taint:${NODE}:${OOS.timeAdded}`, 'done'],
    ]);
    // Cleanup precedes unfence: refused above until boot 2's clean-up results existed; here our
    // fence is lifted before the taint goes, and nothing else is written.
    const rm = r.commands.findIndex((c) => c.argv.join(' ') === `ceph osd blocklist rm ${oldClient}`);
    const patch = r.commands.findIndex((c) => c.argv[0] === 'kube:patch-node');
    expect(rm).toBeGreaterThanOrEqual(0);
    expect(patch).toBeGreaterThan(rm);
    expect(r.commands.filter((c) => c.argv.includes('blocklist') && !c.argv.includes('ls')).map((c) => c.argv.join(' '))).toEqual([
      `ceph osd blocklist rm ${oldClient}`,
    ]);
    expect(api.requestsTo('PATCH', '/api/v1/nodes')).toHaveLength(1);
    const node = api.get('v1', 'Node', NODE) as { spec: { taints: object[] } };
    expect(node.spec.taints).toEqual([UNSCHEDULABLE, DEDICATED]);
    expect(await blocklisted()).toEqual([]);
    // The rebooted node maps (as it could before: our entry named boot 1's client only).
    expect((await vm.run(['rbd', 'map', `${POOL}/${PROBE}`])).code).toBe(0);
    await vm.runOk(['rbd', 'unmap', `${POOL}/${PROBE}`]);
  }, 300_000);
});
