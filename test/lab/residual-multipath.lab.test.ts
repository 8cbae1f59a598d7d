// residual-multipath-cleanup on a real kernel: Debian 12's kernel under qemu with dm-multipath
// over scsi_debug. Four maps (one scsi_debug target each, three paths each):
//   dead         every path offline, queueing (no_path_retry queue): reads hang, the probe is
//                abandoned in D state; the runbook must release the queue, flush it, delete its disks
//   deadMounted  every path offline too, but still mounted at /mnt/stale: refused (a mount is a
//                real user), never released, flushed or deleted
//   degraded     one path offline, two alive: must not be touched
//   healthy      mounted at /mnt/healthy: must not be touched, and stay mounted
// The real runbook code runs on the host side, acting on the guest through a Host adapter over
// the lab command channel. A cluster where nothing is attached to the node (known, empty), a
// short grace: the first look at a dead map parks the job (one sample is not a verdict), the run
// after the grace acts. Run again: the second job changes nothing (it refuses the mounted dead
// map again, as the first did, and never probes it).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../src/core/catalogue/result.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import { InMemoryAttachedVolumes } from '../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { RefusedError } from '../../src/core/errors.ts';
import { ParkedError } from '../../workers/engine/gate.ts';
import { labSkipReason } from './image.ts';
import { createQueueingScsiDebugMaps, failPaths, listMaps, type GuestMap } from './scsi-debug-scenario.ts';
import { createIscsiLab, removeLun, type IscsiLun } from './iscsi-scenario.ts';
import { guestHost } from './guest-host.ts';
import { waitInGuest } from './guest-wait.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (residual-multipath): ${skipReason} ***\n`);

const STATE_DIR = '/var/lib/volume-medic';
const PROBE_TIMEOUT_MS = 3_000;
/** The all-dead grace of the lab: long enough to need a second look, short enough for TCG. */
const GRACE_MS = 3_000;
const timings: Record<string, string> = {};
const log = (line: string) => console.log(line);

/** The real runbook acting on the guest: nothing attached to the node, a short probe deadline and grace. */
const labHandler = (vm: LabVm, stats: { snapshots: number; commands: number }) =>
  createResidualMultipathCleanup({
    host: guestHost(vm, stats, STATE_DIR),
    stateDir: STATE_DIR,
    attached: new InMemoryAttachedVolumes({}),
    policy: { probeTimeoutMs: PROBE_TIMEOUT_MS, allDeadGraceMs: GRACE_MS },
  });

/**
 * Runs a job as the node agent would: parked for maturing evidence, it runs again when the
 * evidence can have matured. Returns the final result and those of the parked attempts.
 */
async function untilDone(
  handler: ReturnType<typeof labHandler>,
  j: ResidualMultipathJob,
  c: RunbookContext,
): Promise<{ result: RunbookResult; parked: RunbookResult[] }> {
  const parked: RunbookResult[] = [];
  for (;;) {
    try {
      return { result: await handler(j, c), parked };
    } catch (err) {
      if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || parked.length >= 3) throw err;
      parked.push(err.result);
      await new Promise((r) => setTimeout(r, Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 100));
    }
  }
}

const job = (n: number): ResidualMultipathJob => ({
  version: 1,
  key: `residual_lab_${n}`,
  runbook: 'residual-multipath-cleanup',
  target: { node: 'lab-node' },
  evidence: [{ source: 'api', summary: 'lab', raw: {} }],
});
const ctx = (mode: Mode, n: number): RunbookContext => ({
  jobId: `residual_lab_${n}`,
  attempt: 1,
  mode,
  ranOn: 'lab-node',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

describe.skipIf(skipReason !== null)('residual-multipath-cleanup on a real kernel (scsi_debug, dm-multipath)', () => {
  let vm: LabVm;
  let dead: GuestMap;
  let deadMounted: GuestMap;
  let degraded: GuestMap;
  let healthy: GuestMap;
  const stats = { snapshots: 0, commands: 0 };
  let handler: ReturnType<typeof createResidualMultipathCleanup>;

  beforeAll(async () => {
    let t = performance.now();
    vm = await bootLabVm({ log });
    timings['boot to ready'] = `${vm.bootMs} ms`;
    t = performance.now();
    // Queue forever on a dead map, as iSCSI/FC CSI set-ups commonly do: the probe must hang.
    const maps = await createQueueingScsiDebugMaps(vm, 4);
    [dead, degraded, healthy, deadMounted] = maps as [GuestMap, GuestMap, GuestMap, GuestMap];
    await vm.runOk(
      `set -e; mkfs.ext4 -q /dev/mapper/${healthy.name}; mkdir -p /mnt/healthy; mount /dev/mapper/${healthy.name} /mnt/healthy; echo data > /mnt/healthy/file; sync`,
    );
    await vm.runOk(`set -e; mkfs.ext4 -q /dev/mapper/${deadMounted.name}; mkdir -p /mnt/stale; mount /dev/mapper/${deadMounted.name} /mnt/stale; sync`);
    await failPaths(vm, dead.paths);
    await failPaths(vm, deadMounted.paths);
    await failPaths(vm, [degraded.paths[0]!]);
    timings['4 maps, failures in place'] = `${Math.round(performance.now() - t)} ms`;
    log(
      `[residual-lab] dead ${dead.name} ${dead.dm} ${dead.paths.join(',')}; dead but mounted ${deadMounted.name} ${deadMounted.dm}; degraded ${degraded.name}; healthy ${healthy.name} (mounted)`,
    );
    log((await vm.runOk(['multipath', '-ll'])).stdout);
    handler = labHandler(vm, stats);
  }, 10 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    console.log(
      `\nresidual-multipath lab timings:\n${Object.entries(timings)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n  guest snapshots ${stats.snapshots}, commands ${stats.commands}\n`,
    );
  });

  const timed = async (name: string, f: () => Promise<RunbookResult>): Promise<RunbookResult> => {
    const t = performance.now();
    try {
      return await f();
    } finally {
      timings[name] = `${Math.round(performance.now() - t)} ms`;
    }
  };

  it('plans in dry-run to clean exactly the dead map, changing nothing', async () => {
    const r = await timed('dry-run', () => handler(job(1), ctx('dry-run', 1)));
    expect(r.outcome).toBe('planned');
    expect(r.summary).toContain(`remove residual map(s) ${dead.name} (${dead.dm}`);
    // The dead map queues I/O: a dry-run does not probe it, since the probe would be left stuck
    // in D state on the node; the plan shows what enforce does if its probe fails.
    expect(r.commands.some((c) => c.argv[0] === 'dd')).toBe(false);
    expect((await vm.run("ps -eo stat,args | awk '$1 ~ /^D/ && /dd if=/'")).stdout.trim()).toBe('');
    expect((await listMaps(vm)).map((m) => m.name)).toEqual(expect.arrayContaining([dead.name, deadMounted.name, degraded.name, healthy.name]));
  }, 180_000);

  it('removes the dead map, its disks and by-id links; refuses the dead map that is still mounted; leaves the degraded and the mounted healthy map alone', async () => {
    let parked: RunbookResult[] = [];
    const r = await timed('enforce (first job: a look, the grace, a second look)', async () => {
      const done = await untilDone(handler, job(2), ctx('enforce', 2));
      parked = done.parked;
      return done.result;
    });
    log(`[residual-lab] ${r.outcome}: ${r.summary}`);
    log(`[residual-lab] steps: ${r.steps.map((s) => `${s.id} ${s.status} ${s.durationMs}ms`).join('; ')}`);
    expect(r.outcome).toBe('succeeded');
    // The first look parked the job before releasing anything: one sighting is not a verdict.
    expect(parked).toHaveLength(1);
    expect(parked[0]?.summary).toMatch(new RegExp(`every path of ${dead.name} stayed dead over time: held for \\d+ s over 1 observation`));
    expect(parked[0]?.commands.some((c) => c.argv[1] === 'message' || (c.argv[0] === 'multipath' && c.argv[1] === '-f'))).toBe(false);
    // Enforce probes the queueing map once: the probe hangs on queued I/O and is abandoned at its
    // deadline; the second look knows it as ours and does not probe again.
    const probe = parked[0]?.commands.find((c) => c.argv[0] === 'dd');
    log(
      `[residual-lab] enforce probe: ${JSON.stringify({ timedOut: probe?.timedOut, exitCode: probe?.exitCode, durationMs: probe?.durationMs, stuckPids: probe?.stuckPids })}`,
    );
    expect(probe?.timedOut).toBe(true);
    expect(probe!.durationMs).toBeLessThan(PROBE_TIMEOUT_MS + 5_000);
    expect(r.commands.some((c) => c.argv[0] === 'dd')).toBe(false);
    // The mounted dead map is held by a cheaper interlock, so it is never probed.
    expect([...parked, r].flatMap((x) => x.commands).some((c) => c.argv[0] === 'dd' && c.argv[1] === `if=/dev/${deadMounted.dm}`)).toBe(false);
    expect(r.steps.map((s) => s.id.split(':')[0])).toEqual([
      'record-intent',
      'release-queued-io',
      'flush-map',
      'delete-disk',
      'delete-disk',
      'delete-disk',
      'close-intent',
    ]);
    expect(r.steps.filter((s) => s.destructive).every((s) => (s.evidence?.length ?? 0) > 0 && s.evidence!.every((e) => e.status === 'holds'))).toBe(true);
    expect(r.verification).toMatchObject({ ok: true });
    const maps = await listMaps(vm);
    expect(maps.map((m) => m.name).sort()).toEqual([deadMounted.name, degraded.name, healthy.name].sort());
    // The dead map that is still mounted was refused, for that reason, and not touched.
    expect(r.summary).toMatch(new RegExp(`${deadMounted.name}[^;]*mounted at /mnt/stale`));
    expect(r.steps.some((s) => s.id.includes(deadMounted.name) || (deadMounted.dm !== null && s.id.includes(deadMounted.dm)))).toBe(false);
    expect((await vm.runOk(['findmnt', '-n', '-o', 'SOURCE', '/mnt/stale'])).stdout.trim()).toBe(`/dev/mapper/${deadMounted.name}`);
    const disks = (await vm.runOk('ls /sys/block')).stdout.split(/\s+/);
    for (const p of dead.paths) expect(disks).not.toContain(p);
    for (const p of [...deadMounted.paths, ...degraded.paths, ...healthy.paths]) expect(disks).toContain(p);
    expect((await vm.runOk(['ls', '/dev/disk/by-id'])).stdout).not.toContain(dead.uuid.replace(/^mpath-/, ''));
    expect((await vm.runOk(['cat', '/mnt/healthy/file'])).stdout).toBe('data\n');
    expect((await vm.runOk(['findmnt', '-n', '-o', 'SOURCE', '/mnt/healthy'])).stdout.trim()).toBe(`/dev/mapper/${healthy.name}`);
    // No probe left stuck anywhere: the cleaned map's was released with its queue, and the
    // mounted dead map was never probed.
    expect((await vm.run(`ps -eo stat,args | awk '$1 ~ /^D/ && /dd if=/'`)).stdout.trim()).toBe('');
    expect((await vm.run(['ls', `${STATE_DIR}/intents/residual-multipath`])).stdout.trim()).toBe('');
  }, 180_000);

  it('changes nothing when run again: only the mounted dead map is left, and it is refused again', async () => {
    const before = (await vm.runOk(['multipath', '-ll'])).stdout;
    const err = await timed('enforce (second run)', () => handler(job(3), ctx('enforce', 3))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    const r = (err as RefusedError).result as RunbookResult;
    expect(r.outcome).toBe('refused');
    expect(r.refusals.join(' ')).toMatch(new RegExp(`${deadMounted.name}[^;]*mounted at /mnt/stale`));
    // Nothing changed on the node; the agent's own bookkeeping (another look at the dead map, in its state directory) is all it wrote.
    expect(
      r.commands.some(
        (c) =>
          (c.argv[0] === 'multipath' && c.argv[1] === '-f') ||
          c.argv[1] === 'message' ||
          ((c.argv[0] ?? '').startsWith('host:') && !(c.argv[1] ?? '').startsWith(`${STATE_DIR}/`)),
      ),
    ).toBe(false);
    expect((await listMaps(vm)).map((m) => m.name).sort()).toEqual([deadMounted.name, degraded.name, healthy.name].sort());
    expect(
      (await vm.runOk(['multipath', '-ll'])).stdout
        .split('\n')
        .filter((l) => /dm-\d+/.test(l))
        .sort(),
    ).toEqual(
      before
        .split('\n')
        .filter((l) => /dm-\d+/.test(l))
        .sort(),
    );
  }, 120_000);
});

// The seed's real failure: an iSCSI LUN unmapped on the target (LIO) while the node keeps its
// map. Both paths go `failed faulty running`, the map queues I/O (no_path_retry queue, as the
// storage's CSI set-ups commonly configure), udev workers and the probe hang on it. The runbook
// must release the queue, flush the map and delete its disks, and leave the other LUN's map,
// mounted, untouched; a second run finds nothing to do.
describe.skipIf(skipReason !== null)('residual-multipath-cleanup on a real kernel (LIO iSCSI, LUN removed under a live map)', () => {
  let vm: LabVm;
  let healthy: IscsiLun;
  let doomed: IscsiLun;
  const stats = { snapshots: 0, commands: 0 };
  let handler: ReturnType<typeof createResidualMultipathCleanup>;

  beforeAll(async () => {
    vm = await bootLabVm({ log });
    timings['iSCSI: boot to ready'] = `${vm.bootMs} ms`;
    const t = performance.now();
    await vm.runOk(`printf 'overrides {\\n\\tno_path_retry queue\\n}\\n' >> /etc/multipath.conf && multipathd reconfigure`);
    [healthy, doomed] = (await createIscsiLab(vm)) as [IscsiLun, IscsiLun];
    await vm.runOk(
      `set -e; mkfs.ext4 -q /dev/mapper/${healthy.map.name}; mkdir -p /mnt/healthy; mount /dev/mapper/${healthy.map.name} /mnt/healthy; echo data > /mnt/healthy/file; sync`,
    );
    await removeLun(vm, doomed.lun);
    await waitInGuest(
      vm,
      `both paths of ${doomed.map.name} failed faulty`,
      ['multipathd', 'show', 'paths', 'format', '%d %t %T %o'],
      (out) => doomed.map.paths.every((p) => new RegExp(`^${p}\\s+failed\\s+faulty`, 'm').test(out)),
      { timeoutMs: 90_000 },
    );
    timings['iSCSI: target, login, 2 maps, LUN removed'] = `${Math.round(performance.now() - t)} ms`;
    log(`[residual-lab] iSCSI: LUN ${doomed.lun} removed under ${doomed.map.name}; LUN ${healthy.lun} ${healthy.map.name} mounted`);
    log((await vm.runOk(['multipath', '-ll'])).stdout);
    handler = labHandler(vm, stats);
  }, 10 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    const mine = Object.entries(timings).filter(([k]) => k.startsWith('iSCSI'));
    console.log(
      `\nresidual-multipath lab timings (iSCSI):\n${mine.map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n  guest snapshots ${stats.snapshots}, commands ${stats.commands}\n`,
    );
  });

  it('releases the queue, flushes the dead map and deletes its disks; the mounted map of the other LUN is untouched', async () => {
    const t = performance.now();
    const { result: r, parked } = await untilDone(handler, job(11), ctx('enforce', 11));
    timings['iSCSI: enforce (first job, with the grace)'] = `${Math.round(performance.now() - t)} ms`;
    log(`[residual-lab] iSCSI ${r.outcome}: ${r.summary}`);
    expect(r.outcome).toBe('succeeded');
    expect(parked).toHaveLength(1);
    expect(r.steps.map((s) => s.id.split(':')[0])).toEqual(['record-intent', 'release-queued-io', 'flush-map', 'delete-disk', 'delete-disk', 'close-intent']);
    // The udev worker stuck on the removed LUN's queue is a known victim, named in the evidence.
    const flush = r.steps.find((s) => s.id.startsWith('flush-map'));
    log(`[residual-lab] iSCSI openers: ${flush?.evidence?.find((e) => /known victim/.test(e.claim))?.detail ?? '?'}`);
    expect(r.verification).toMatchObject({ ok: true });
    expect((await listMaps(vm)).map((m) => m.name)).toEqual([healthy.map.name]);
    const disks = (await vm.runOk('ls /sys/block')).stdout.split(/\s+/);
    for (const p of doomed.map.paths) expect(disks).not.toContain(p);
    for (const p of healthy.map.paths) expect(disks).toContain(p);
    expect((await vm.runOk(['cat', '/mnt/healthy/file'])).stdout).toBe('data\n');
    expect((await vm.runOk(['findmnt', '-n', '-o', 'SOURCE', '/mnt/healthy'])).stdout.trim()).toBe(`/dev/mapper/${healthy.map.name}`);
    // Nothing is left stuck on the removed LUN's queue once it was released.
    expect((await vm.run(`ps -eo stat,args | awk '$1 ~ /^D/'`)).stdout.trim()).toBe('');
  }, 180_000);

  it('finds nothing to do when run again', async () => {
    const r = await handler(job(12), ctx('enforce', 12));
    expect(r.outcome).toBe('nothing-to-do');
    expect(r.commands.some((c) => c.argv[0] === 'dd' || (c.argv[0] === 'multipath' && c.argv[1] === '-f'))).toBe(false);
  }, 120_000);
});
