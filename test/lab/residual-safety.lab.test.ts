// Issue 19 on a real kernel (Debian 12 under qemu, dm-multipath over scsi_debug, maps that queue
// I/O): the two things only a real kernel can show.
//   1. A real process doing direct I/O on a map whose paths go down for a while and come back is
//      never touched (it is a live user, in D state while its I/O queues), even by a job that runs
//      after the all-dead grace; its I/O completes, every byte of it, once the paths return.
//   2. An agent killed between `multipath -f` and the disk deletes leaves an intent record; the
//      next job removes exactly the orphan SCSI disks, and nothing else.
// The kill is a real SIGKILL: the runbook runs in a child process (residual-child.ts) whose guest
// commands this process relays to the VM, and it is killed when it asks for its first disk delete,
// before that command reaches the guest.
import { fork } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../src/core/catalogue/result.ts';
import { RefusedError } from '../../src/core/errors.ts';
import { ParkedError } from '../../workers/engine/gate.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import { InMemoryAttachedVolumes } from '../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { labSkipReason } from './image.ts';
import { guestHost, type GuestCommands } from './guest-host.ts';
import type { ChildJob, ToChild, ToParent } from './residual-child.ts';
import { createQueueingScsiDebugMaps, failPaths, listMaps, pathStates, restorePaths, type GuestMap } from './scsi-debug-scenario.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (residual-safety): ${skipReason} ***\n`);

const STATE_DIR = '/var/lib/volume-medic';
const POLICY = { probeTimeoutMs: 3_000, allDeadGraceMs: 3_000 };
const WRITER_SECONDS = 20;
// ...and at least this many writes, so some land after the outage however slow the emulation is
// (a loaded CI machine once let a 20 s writer finish 8, all of them before or during the outage).
const WRITER_MIN_WRITES = 20;
const log = (line: string) => console.log(line);
const timings: Record<string, string> = {};

const job = (n: number): ResidualMultipathJob => ({
  version: 1,
  key: `residual_safety_${n}`,
  runbook: 'residual-multipath-cleanup',
  target: { node: 'lab-node' },
  evidence: [{ source: 'api', summary: 'lab', raw: {} }],
});
const ctx = (n: number): RunbookContext => ({
  jobId: `residual_safety_${n}`,
  attempt: 1,
  mode: 'enforce',
  ranOn: 'lab-node',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

/** A fresh handler of the real runbook over the guest, for a cluster where nothing is attached to the node. */
const handlerOn = (vm: GuestCommands) =>
  createResidualMultipathCleanup({
    host: guestHost(vm, { snapshots: 0, commands: 0 }, STATE_DIR),
    stateDir: STATE_DIR,
    attached: new InMemoryAttachedVolumes({}),
    policy: POLICY,
  });

/** As the node agent runs a job: parked for maturing evidence, it runs again when that can have matured. */
async function untilDone(handler: ReturnType<typeof handlerOn>, n: number): Promise<{ result: RunbookResult; parked: number }> {
  for (let parked = 0; ; parked++) {
    try {
      return { result: await handler(job(n), ctx(n)), parked };
    } catch (err) {
      if (!(err instanceof ParkedError) || err.parking.reason !== 'evidence' || parked >= 3) throw err;
      await sleep(Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 100);
    }
  }
}

/** Every command run on the guest, as argv (a shell string as `bash -c ...`). */
const argvOf = (cmd: readonly string[] | string): string[] => (typeof cmd === 'string' ? ['bash', '-c', cmd] : [...cmd]);

/** The VM's command channel, recording every command into `into`. */
const recordingVm = (vm: LabVm, into: string[][]): GuestCommands => ({
  run: (cmd, o) => {
    into.push(argvOf(cmd));
    return vm.run(cmd, o);
  },
  runOk: (cmd, o) => {
    into.push(argvOf(cmd));
    return vm.runOk(cmd, o);
  },
});

const isDiskDelete = (a: readonly string[]): boolean => a[0] === 'tee' && /^\/sys\/block\/sd[a-z]+\/device\/delete$/.test(a[1] ?? '');
/** A guest command that releases queued I/O, flushes a map or deletes a disk. */
const DESTRUCTIVE = (a: readonly string[]): boolean => (a[0] === 'dmsetup' && a[1] === 'message') || (a[0] === 'multipath' && a[1] === '-f') || isDiskDelete(a);
/** A guest command that changes a file outside the agent's own state directory (guestHost writes with tee, ln, mv, rm, mkdir). */
const WRITES_OUTSIDE_STATE = (a: readonly string[]): boolean =>
  ['tee', 'ln', 'mv', 'rm', 'mkdir'].includes(a[0] ?? '') &&
  !a
    .slice(1)
    .filter((x) => x.startsWith('/'))
    .every((x) => x.startsWith(`${STATE_DIR}/`));
const show = (cmds: readonly string[][]): string[] => cmds.map((a) => a.join(' '));

/** `lsscsi` lines of scsi_debug disks, by H:C:T:L. */
async function scsiDebugDisks(vm: LabVm): Promise<Map<string, string>> {
  const out = (await vm.runOk(['lsscsi'])).stdout;
  const rows = new Map<string, string>();
  for (const line of out.split('\n')) {
    const m = /^\[(\d+:\d+:\d+:\d+)\]\s+disk\s+.*scsi_debug.*\s(\/dev\/sd[a-z]+)\s*$/.exec(line);
    if (m) rows.set(m[1]!, m[2]!);
  }
  return rows;
}

describe.skipIf(skipReason !== null)('issue 19 on a real kernel: live I/O through a transient outage, and an agent killed between flush and delete', () => {
  let vm: LabVm;
  let live: GuestMap;
  let doomed: GuestMap;

  beforeAll(async () => {
    vm = await bootLabVm({ log });
    timings['boot to ready'] = `${vm.bootMs} ms`;
    const t = performance.now();
    const maps = await createQueueingScsiDebugMaps(vm, 2);
    [live, doomed] = maps as [GuestMap, GuestMap];
    timings['2 queueing scsi_debug maps'] = `${Math.round(performance.now() - t)} ms`;
    log(`[residual-safety] live I/O on ${live.name} ${live.dm} ${live.paths.join(',')}; doomed ${doomed.name} ${doomed.dm} ${doomed.paths.join(',')}`);
  }, 10 * 60_000);

  afterAll(async () => {
    await vm?.shutdown();
    console.log(
      `\nresidual-safety lab timings:\n${Object.entries(timings)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  it('never touches a map whose writer is stuck on queued I/O while its paths are down, even after the grace; every write lands once they return', async () => {
    const t0 = performance.now();
    // A writer that holds the map open, like a database: 4 KiB O_DIRECT writes with fsync, 20 ms
    // apart, for WRITER_SECONDS of wall time (the write in flight when that passes still finishes).
    // Block i gets byte (i mod 255) + 1, so a block never written (zeros) cannot pass for one written.
    const writer = `
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
start, n = time.time(), 0
while time.time() - start < ${WRITER_SECONDS} or n < ${WRITER_MIN_WRITES}:
    buf.seek(0); buf.write(bytes([n % 255 + 1]) * 4096)
    if os.pwrite(fd, buf, n * 4096) != 4096: sys.exit(3)
    os.fsync(fd)
    n += 1
    time.sleep(0.02)
os.close(fd)
print(n)
`;
    await vm.runOk(['tee', '/tmp/writer.py'], { stdin: writer });
    await vm.runOk(
      `setsid sh -c 'python3 /tmp/writer.py /dev/mapper/${live.name} > /tmp/writer.out 2>&1; echo $? > /tmp/writer.rc' < /dev/null > /dev/null 2>&1 &`,
    );
    const writerPid = async () => (await vm.runOk(`pgrep -f '^python3 /tmp/writer.py' || true`)).stdout.trim();
    await sleep(1_000);
    const pid = await writerPid();
    expect(pid).toMatch(/^\d+$/);

    await failPaths(vm, live.paths);
    const downAt = performance.now();
    // Its next write queues on the map: the writer is in D state with the map open, like a database would be.
    let state = '';
    for (let i = 0; i < 40 && state !== 'D'; i++) {
      state = (await vm.run(['ps', '-o', 'stat=', '-p', pid])).stdout.trim().slice(0, 1);
      if (state !== 'D') await sleep(250);
    }
    log(`[residual-safety] writer pid ${pid} while the paths are down: state ${state}`);
    expect(state).toBe('D');

    // The agent's jobs while the paths are down: the first look, and another after the all-dead grace.
    const guest: string[][] = [];
    const refusals: string[] = [];
    for (const n of [1, 2]) {
      if (n === 2) await sleep(POLICY.allDeadGraceMs + 500);
      const err = await untilDone(handlerOn(recordingVm(vm, guest)), n).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RefusedError);
      const r = (err as RefusedError).result as RunbookResult;
      refusals.push((err as RefusedError).reasons.join(' '));
      log(`[residual-safety] job ${n} while the paths are down: ${r.outcome}: ${refusals.at(-1)}`);
      expect(refusals.at(-1)).toMatch(new RegExp(`${live.name}.*live user\\(s\\): pid ${pid} \\(python3, state D`));
      // The job's own audit trail agrees: nothing destructive, no probe of a held map, no change
      // on the node but the agent's bookkeeping in its state directory.
      expect(
        r.commands
          .filter(
            (c) =>
              DESTRUCTIVE(c.argv) ||
              c.argv[0] === 'dd' ||
              (c.argv[0]?.startsWith('host:') && !c.argv.slice(1, 3).every((x) => x.startsWith(`${STATE_DIR}/`) || !x.startsWith('/'))),
          )
          .map((c) => c.argv.join(' ')),
      ).toEqual([]);
    }
    // Nothing destructive reached the guest, nothing outside the agent's state directory was
    // written, and the held map was never probed.
    expect(show(guest.filter(DESTRUCTIVE))).toEqual([]);
    expect(show(guest.filter(WRITES_OUTSIDE_STATE))).toEqual([]);
    expect(show(guest.filter((a) => a[0] === 'dd'))).toEqual([]);
    // The outage lasted through both jobs.
    const states = await pathStates(vm);
    expect(live.paths.map((p) => `${p} ${states.get(p)?.dm} ${states.get(p)?.checker} ${states.get(p)?.dev}`)).toEqual(
      live.paths.map((p) => `${p} failed faulty offline`),
    );
    expect((await vm.runOk(['ps', '-o', 'stat=', '-p', pid])).stdout.trim()).toMatch(/^D/);

    await restorePaths(vm, live.paths);
    timings['outage (paths offline -> running again)'] = `${Math.round(performance.now() - downAt)} ms`;
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
    // Every write reached the disk (read back with O_DIRECT, past any cache): block i holds byte
    // (i mod 255) + 1, and the block after the last one is still zeros.
    const check = await vm.runOk([
      'python3',
      '-c',
      `
import mmap, os
fd = os.open('/dev/mapper/${live.name}', os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
def block(i):
    assert os.preadv(fd, [buf], i * 4096) == 4096
    return bytes(buf)
bad = [i for i in range(${written}) if block(i) != bytes([i % 255 + 1]) * 4096]
print('bad', bad[:10], 'next', block(${written}) == bytes(4096))
`,
    ]);
    expect(check.stdout.trim()).toBe('bad [] next True');

    // The map and its three disks are there and healthy.
    expect((await listMaps(vm)).find((m) => m.name === live.name)?.paths).toEqual(live.paths);
    const after = await pathStates(vm);
    expect(live.paths.map((p) => `${p} ${after.get(p)?.dm} ${after.get(p)?.checker} ${after.get(p)?.dev}`)).toEqual(
      live.paths.map((p) => `${p} active ready running`),
    );
    expect([...(await scsiDebugDisks(vm)).values()]).toEqual(expect.arrayContaining(live.paths.map((p) => `/dev/${p}`)));

    // And a job after the outage has nothing to do, and does nothing.
    const before = guest.length;
    const { result: r } = await untilDone(handlerOn(recordingVm(vm, guest)), 3);
    expect(r.outcome).toBe('nothing-to-do');
    expect(show(guest.slice(before).filter((a) => DESTRUCTIVE(a) || WRITES_OUTSIDE_STATE(a)))).toEqual([]);
    timings['live writer through an outage'] = `${Math.round(performance.now() - t0)} ms`;
  }, 300_000);

  it('after an agent SIGKILLed between flush and delete, the next job removes exactly the orphan disks', async () => {
    const t0 = performance.now();
    const disksBefore = await scsiDebugDisks(vm);
    const hctlOf = new Map([...disksBefore].map(([hctl, dev]) => [dev.replace('/dev/', ''), hctl]));
    const doomedHctl = doomed.paths.map((p) => hctlOf.get(p));
    const liveHctl = live.paths.map((p) => hctlOf.get(p));
    expect([...doomedHctl, ...liveHctl].every((h) => h !== undefined)).toBe(true);
    await failPaths(vm, doomed.paths);

    // The agent: the runbook in a child process, its guest commands relayed here. It is killed
    // when it asks for its first disk delete, before that reaches the guest.
    const guest: string[][] = [];
    const seen: { killedAt: string[] | null; last: ToParent | null } = { killedAt: null, last: null };
    const spec: ChildJob = { key: 'residual_safety_4', stateDir: STATE_DIR, policy: POLICY };
    const child = fork(fileURLToPath(new URL('./residual-child.ts', import.meta.url)), [JSON.stringify(spec)], {
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    child.on('message', (m: ToParent) => {
      if (m.t !== 'run') {
        seen.last = m;
        return;
      }
      const argv = argvOf(m.cmd);
      if (isDiskDelete(argv) && seen.killedAt === null) {
        seen.killedAt = argv;
        child.kill('SIGKILL');
        return;
      }
      if (seen.killedAt !== null) return;
      guest.push(argv);
      void vm.run(m.cmd, m.opts).then((result) => {
        if (child.connected) child.send({ t: 'ran', id: m.id, result } satisfies ToChild);
      });
    });
    const [code, signal] = await exited;
    log(
      `[residual-safety] agent exited: code ${code}, signal ${signal}, killed at ${seen.killedAt?.join(' ') ?? '-'}; its last word ${JSON.stringify(seen.last)}`,
    );
    expect(signal).toBe('SIGKILL');
    // Killed, not finished: it never reported back.
    expect(seen.last).toBeNull();
    expect(doomed.paths.map((p) => `/sys/block/${p}/device/delete`)).toContain(seen.killedAt?.[1]);
    // It had released the queue and flushed the map, and deleted nothing.
    expect(show(guest.filter(DESTRUCTIVE))).toEqual([`dmsetup message ${doomed.name} 0 fail_if_no_path`, `multipath -f ${doomed.name}`]);

    // The map is flushed, its disks are left behind, and the intent record names them.
    expect((await listMaps(vm)).map((m) => m.name)).toEqual([live.name]);
    const blocks = (await vm.runOk('ls /sys/block')).stdout.split(/\s+/);
    for (const p of doomed.paths) expect(blocks).toContain(p);
    const orphans = await scsiDebugDisks(vm);
    for (const h of doomedHctl) expect(orphans.has(h!)).toBe(true);
    const wwid = doomed.uuid.replace(/^mpath-/, '');
    const record = JSON.parse((await vm.runOk(['cat', `${STATE_DIR}/intents/residual-multipath/${wwid}.json`])).stdout) as {
      map: string;
      disks: Array<{ name: string; hctl: string | null; wwid: string }>;
      done: Array<{ step: string }>;
    };
    expect(record.map).toBe(doomed.name);
    expect(record.disks.map((d) => `${d.name} ${d.hctl} ${d.wwid}`).sort()).toEqual(doomed.paths.map((p) => `${p} ${hctlOf.get(p)} ${wwid}`).sort());
    expect(record.done.map((d) => d.step.split(':')[0])).toEqual(['release-queued-io', 'flush-map']);
    log(`[residual-safety] after the kill: ${doomed.name} gone, ${doomed.paths.join(',')} left, intent record kept`);

    // A new job (another key and id: its journal knows nothing of the killed one), a fresh handler.
    const next: string[][] = [];
    const { result: r } = await untilDone(handlerOn(recordingVm(vm, next)), 5);
    log(`[residual-safety] next job ${r.outcome}: ${r.summary}`);
    expect(r.outcome).toBe('succeeded');
    expect(
      r.steps
        .filter((s) => s.destructive)
        .map((s) => s.id.split(':').slice(0, 2).join(':'))
        .sort(),
    ).toEqual(doomed.paths.map((p) => `delete-disk:${p}`).sort());
    expect(r.steps.filter((s) => s.destructive).every((s) => (s.evidence?.length ?? 0) > 0 && s.evidence!.every((e) => e.status === 'holds'))).toBe(true);
    // On the guest: exactly the orphans' deletes, no release or flush of any map, no other write
    // outside the agent's state directory.
    expect(show(next.filter(DESTRUCTIVE)).sort()).toEqual(doomed.paths.map((p) => `tee /sys/block/${p}/device/delete`).sort());
    expect(show(next.filter((a) => WRITES_OUTSIDE_STATE(a) && !isDiskDelete(a)))).toEqual([]);
    const blocksAfter = (await vm.runOk('ls /sys/block')).stdout.split(/\s+/);
    for (const p of doomed.paths) expect(blocksAfter).not.toContain(p);
    for (const p of live.paths) expect(blocksAfter).toContain(p);
    const disksAfter = await scsiDebugDisks(vm);
    expect([...disksAfter.keys()].sort()).toEqual(liveHctl.map(String).sort());
    expect((await vm.run(['ls', `${STATE_DIR}/intents/residual-multipath`])).stdout.trim()).toBe('');
    // The other map is untouched: there, with its three paths active.
    expect((await listMaps(vm)).map((m) => `${m.name} ${m.paths.join(',')}`)).toEqual([`${live.name} ${live.paths.join(',')}`]);
    const states = await pathStates(vm);
    expect(live.paths.map((p) => `${p} ${states.get(p)?.dm} ${states.get(p)?.checker}`)).toEqual(live.paths.map((p) => `${p} active ready`));
    timings['kill between flush and delete, then the next job'] = `${Math.round(performance.now() - t0)} ms`;
  }, 300_000);
});
