// Issue 19 on a real kernel (Debian 12 under qemu, dm-multipath over scsi_debug, maps that queue
// I/O): the two things only a real kernel can show.
//   1. A real process doing I/O on a map whose paths go down for a few seconds and come back is
//      never touched (it is a live user, in D state while the I/O queues), and its I/O completes.
//   2. An agent killed between `multipath -f` and the disk deletes leaves an intent record; the
//      next job removes exactly the orphan SCSI disks, and nothing else.
// The agent's death is simulated by a Host wrapper that throws at the first disk delete, after the
// flush took effect on the guest: from the guest's side that is what a SIGKILL there leaves.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../src/catalogue/jobs.ts';
import type { RunbookResult } from '../../src/catalogue/result.ts';
import { RefusedError } from '../../workers/engine/errors.ts';
import { ParkedError } from '../../workers/engine/gate.ts';
import type { Host } from '../../workers/host/host.ts';
import type { RunbookContext } from '../../workers/runbooks/registry.ts';
import { InMemoryAttachedVolumes } from '../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { labSkipReason } from './image.ts';
import { guestHost } from './guest-host.ts';
import { createQueueingScsiDebugMaps, failPaths, listMaps, restorePaths, type GuestMap } from './scsi-debug-scenario.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (residual-safety): ${skipReason} ***\n`);

const STATE_DIR = '/var/lib/volume-medic';
const log = (line: string) => console.log(line);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const job = (n: number): ResidualMultipathJob => ({ version: 1, key: `residual_safety_${n}`, runbook: 'residual-multipath-cleanup', target: { node: 'lab-node' }, evidence: [{ source: 'api', summary: 'lab', raw: {} }] });
const ctx = (n: number): RunbookContext => ({ jobId: `residual_safety_${n}`, attempt: 1, mode: 'enforce', ranOn: 'lab-node', log: pino({ level: 'silent' }), signal: new AbortController().signal });

const handlerOn = (host: Host) =>
  createResidualMultipathCleanup({ host, stateDir: STATE_DIR, attached: new InMemoryAttachedVolumes({}), policy: { probeTimeoutMs: 3_000, allDeadGraceMs: 3_000 } });

/** As the node agent runs a job: parked for maturing evidence, it runs again when that can have matured. */
async function untilDone(handler: ReturnType<typeof handlerOn>, n: number): Promise<RunbookResult> {
  for (let i = 0; ; i++) {
    try {
      return await handler(job(n), ctx(n));
    } catch (err) {
      if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || i >= 3) throw err;
      await sleep(Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 100);
    }
  }
}

const DESTRUCTIVE = (argv: readonly string[]): boolean =>
  argv[1] === 'message' || (argv[0] === 'multipath' && argv[1] === '-f') || (argv[0] === 'tee' && /\/device\/delete$/.test(argv[1] ?? ''));

describe.skipIf(skipReason !== null)('issue 19 on a real kernel: live I/O through a transient outage, and an agent killed between flush and delete', () => {
  let vm: LabVm;
  let live: GuestMap;
  let doomed: GuestMap;
  const stats = { snapshots: 0, commands: 0 };
  /** Every argv the runbook ran on the guest, across jobs. */
  const ran: string[][] = [];
  const recording = (inner: Host): Host => ({
    ...inner,
    run: async (argv, o) => {
      ran.push([...argv]);
      return inner.run(argv, o);
    },
    writeSysfs: async (p, v) => {
      ran.push(['tee', p]);
      return inner.writeSysfs(p, v);
    },
  });

  beforeAll(async () => {
    vm = await bootLabVm({ log });
    const maps = await createQueueingScsiDebugMaps(vm, 2);
    [live, doomed] = maps as [GuestMap, GuestMap];
    log(`[residual-safety] live I/O on ${live.name} ${live.dm} ${live.paths.join(',')}; doomed ${doomed.name} ${doomed.dm} ${doomed.paths.join(',')}`);
  }, 10 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    console.log(`\nresidual-safety lab: guest snapshots ${stats.snapshots}, commands ${stats.commands}\n`);
  });

  it('never touches a map whose writer is stuck on queued I/O during a short outage, and the writes complete', async () => {
    // A writer that holds the map open, like a database: 4 KiB writes with fsync, 20 ms apart,
    // for 25 s of its own time (block i mod 4096 of the 16 MiB disk gets byte i mod 251).
    const writer = String.raw`
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
start, n = time.time(), 0
while time.time() - start < 25:
    os.pwrite(fd, bytes([n % 251]) * 4096, (n % 4096) * 4096)
    os.fsync(fd)
    n += 1
    time.sleep(0.02)
os.close(fd)
print(n)
`;
    await vm.runOk(['tee', '/tmp/writer.py'], { stdin: writer });
    await vm.runOk(`setsid sh -c 'python3 /tmp/writer.py /dev/mapper/${live.name} > /tmp/writer.out 2>&1; echo $? > /tmp/writer.rc' < /dev/null > /dev/null 2>&1 &`);
    await sleep(1_000);
    await failPaths(vm, live.paths);
    // The writer is now blocked on queued I/O, in D state, with the map open.
    const dState = await vm.run("ps -eo pid,stat,comm | awk '$2 ~ /^D/ && $3 == \"python3\"'");
    log(`[residual-safety] writer while the paths are down: ${dState.stdout.trim() || '(not in D state at this instant)'}`);

    const err = await handlerOn(recording(guestHost(vm, stats, STATE_DIR)))(job(1), ctx(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    const reasons = (err as RefusedError).reasons.join(' ');
    log(`[residual-safety] refused: ${reasons}`);
    expect(reasons).toMatch(new RegExp(`${live.name}.*live user\\(s\\): pid \\d+ \\(python3, state [DS]`));
    expect(ran.filter(DESTRUCTIVE)).toEqual([]);
    // Held by a user: never probed either.
    expect(ran.some((a) => a[0] === 'dd')).toBe(false);

    await sleep(2_000);
    await restorePaths(vm, live.paths);
    const deadline = Date.now() + 120_000;
    while ((await vm.run(['cat', '/tmp/writer.rc'])).code !== 0) {
      if (Date.now() > deadline) throw new Error(`the writer did not finish: ${(await vm.run(['cat', '/tmp/writer.out'])).stdout}`);
      await sleep(500);
    }
    expect((await vm.runOk(['cat', '/tmp/writer.rc'])).stdout.trim()).toBe('0');
    const written = Number((await vm.runOk(['cat', '/tmp/writer.out'])).stdout.trim());
    log(`[residual-safety] the writer completed ${written} writes`);
    expect(written).toBeGreaterThan(10);
    expect(written).toBeLessThan(4096);
    // Every write reached the disk: block i holds byte i mod 251.
    const check = await vm.runOk(['python3', '-c', `import os\nfd=os.open('/dev/mapper/${live.name}', os.O_RDONLY)\nprint(all(os.pread(fd, 4096, i*4096) == bytes([i % 251])*4096 for i in range(${written})))`]);
    expect(check.stdout.trim()).toBe('True');
    expect((await listMaps(vm)).find((m) => m.name === live.name)?.paths.sort()).toEqual([...live.paths].sort());

    // And a job after the outage has nothing to do on it.
    const after = await untilDone(handlerOn(recording(guestHost(vm, stats, STATE_DIR))), 2);
    expect(after.outcome).toBe('nothing-to-do');
    expect(ran.filter(DESTRUCTIVE)).toEqual([]);
  }, 300_000);

  it('after an agent killed between flush and delete, the next job removes exactly the orphan disks', async () => {
    await failPaths(vm, doomed.paths);
    const host = guestHost(vm, stats, STATE_DIR);
    let killed = false;
    const dying: Host = {
      ...recording(host),
      writeSysfs: async (p, v) => {
        if (!killed && /\/device\/delete$/.test(p)) {
          killed = true;
          throw new Error('the agent was killed here');
        }
        ran.push(['tee', p]);
        return host.writeSysfs(p, v);
      },
    };
    await expect(untilDone(handlerOn(dying), 3)).rejects.toThrow(/the agent was killed here/);
    expect(killed).toBe(true);
    // The map is flushed, its disks are left behind, and the intent record names them.
    expect((await listMaps(vm)).map((m) => m.name)).not.toContain(doomed.name);
    const blocks = (await vm.runOk('ls /sys/block')).stdout.split(/\s+/);
    for (const p of doomed.paths) expect(blocks).toContain(p);
    const wwid = doomed.uuid.replace(/^mpath-/, '');
    const record = JSON.parse((await vm.runOk(['cat', `${STATE_DIR}/intents/residual-multipath/${wwid}.json`])).stdout) as { disks: Array<{ name: string }>; done: Array<{ step: string }> };
    expect(record.disks.map((d) => d.name).sort()).toEqual([...doomed.paths].sort());
    expect(record.done.map((d) => d.step.split(':')[0])).toEqual(['release-queued-io', 'flush-map']);
    log(`[residual-safety] after the kill: ${doomed.name} gone, ${doomed.paths.join(',')} left, intent record kept`);

    // A later job (another id: its journal knows nothing of the first) finishes from the record.
    const before = ran.length;
    const r = await untilDone(handlerOn(recording(guestHost(vm, stats, STATE_DIR))), 4);
    log(`[residual-safety] next job ${r.outcome}: ${r.summary}`);
    expect(r.outcome).toBe('succeeded');
    expect(r.steps.filter((s) => s.destructive).map((s) => s.id.split(':').slice(0, 2).join(':')).sort()).toEqual(doomed.paths.map((p) => `delete-disk:${p}`).sort());
    expect(ran.slice(before).filter(DESTRUCTIVE).map((a) => a[1]).sort()).toEqual(doomed.paths.map((p) => `/sys/block/${p}/device/delete`).sort());
    const after = (await vm.runOk('ls /sys/block')).stdout.split(/\s+/);
    for (const p of doomed.paths) expect(after).not.toContain(p);
    for (const p of live.paths) expect(after).toContain(p);
    expect((await vm.run(['ls', `${STATE_DIR}/intents/residual-multipath`])).stdout.trim()).toBe('');
    expect((await listMaps(vm)).map((m) => m.name)).toEqual([live.name]);
  }, 300_000);
});
