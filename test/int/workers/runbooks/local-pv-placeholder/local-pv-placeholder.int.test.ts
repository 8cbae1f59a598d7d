import { execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LocalPvPlaceholderJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../../../../src/core/catalogue/result.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { RunbookFailedError } from '../../../../../workers/engine/runbook-failed-error.ts';
import { createRealHost } from '../../../../../workers/host/real-host.ts';
import { parseLosetupList } from '../../../../../workers/runbooks/local-pv-placeholder/loops.ts';
import { createLocalPvPlaceholder } from '../../../../../workers/runbooks/local-pv-placeholder/handler.ts';
import { DEFAULT_OPT_IN_LABEL, InMemoryNodeLabels } from '../../../../../workers/runbooks/local-pv-placeholder/node-labels.ts';
import { PlaceholderStore } from '../../../../../workers/runbooks/local-pv-placeholder/record-store.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';

// The placeholder runbook on REAL loop devices. The host root is a temporary folder, so the
// by-id links, /sys/block and the state directory are the test's own; loop devices are the
// kernel's. Every loop device backed by a file under a test root is detached after each test,
// whatever happened in it.

const NODE = 'worker-1';
const STATE_DIR = '/var/lib/volume-medic';
const WWN = '5000c500deadbeef';
const LINK = `/dev/disk/by-id/wwn-0x${WWN}`;
const roots: string[] = [];
let root = '';

function attachedLoops(): Array<{ loop: string; backFile: string | null }> {
  const out = execFileSync('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' });
  return parseLosetupList(out);
}

function detachOurs(): void {
  for (const a of attachedLoops()) {
    if (a.backFile && roots.some((r) => a.backFile?.startsWith(`${r}/`))) execFileSync('losetup', ['-d', `/dev/${a.loop}`]);
  }
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'vm-lpv-'));
  roots.push(root);
});
afterEach(() => detachOurs());
afterAll(async () => {
  detachOurs();
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

const at = (p: string): string => join(root, p);

function job(action: 'place' | 'release' = 'place', pv = 'local-pv-1', link = LINK, by: 'detector' | 'operator' = 'detector'): LocalPvPlaceholderJob {
  return {
    version: 1,
    key: `lpv_${pv}_${action}_${by}_0123456789ab`,
    runbook: 'local-pv-placeholder',
    action,
    target: { node: NODE, pv, path: link },
    ...(action === 'release' ? { release: { by, force: by === 'operator' } } : {}),
    evidence: [
      {
        source: by === 'operator' ? 'api' : 'npd',
        summary: by === 'operator' ? 'release forced by alice: the disk was replaced' : 'LocalDiskLost cleared',
        raw: {},
      },
    ],
  };
}

/** The kernel's half of a disk's return, staged: sysfs names sdq (8:240) with the WWN. */
async function sysfsShowsDisk(): Promise<void> {
  await mkdir(at('/sys/block/sdq/device'), { recursive: true });
  await writeFile(at('/sys/block/sdq/device/wwid'), `naa.${WWN}\n`);
  await writeFile(at('/sys/block/sdq/dev'), '8:240\n');
}

/**
 * The disk comes back, staged under the test's host root the way the kernel and udev show it:
 * /sys/block/sdq with the WWN and its number 8:240, a block device node /dev/sdq with that number
 * (an sd number, not a loop's; this machine's kernel has no SCSI, so the node is made with mknod
 * and opening it would fail, which the runbook never does), and udev's by-id link (`udevLink`:
 * the PV's own path, replacing our link, as udev does). The loop devices are the kernel's.
 */
async function diskComesBack(udevLink: string = LINK): Promise<void> {
  await sysfsShowsDisk();
  execFileSync('mknod', [at('/dev/sdq'), 'b', '8', '240']);
  await rm(at(udevLink), { force: true });
  await symlink('../../sdq', at(udevLink));
}

const ranLosetupDetach = (r: RunbookResult): boolean => r.commands.some((c) => c.argv[0] === 'losetup' && c.argv[1] === '-d');

function ctx(j: LocalPvPlaceholderJob, mode: Mode = 'enforce'): RunbookContext {
  return { jobId: j.key, attempt: 1, mode, ranOn: NODE, log: pino({ level: 'silent' }), signal: new AbortController().signal };
}

function handler(labels: Record<string, string> = { [DEFAULT_OPT_IN_LABEL.key]: DEFAULT_OPT_IN_LABEL.value }) {
  return createLocalPvPlaceholder({
    host: createRealHost({ root }),
    stateDir: STATE_DIR,
    nodeLabels: new InMemoryNodeLabels({ [NODE]: labels }),
  });
}

async function place(pv = 'local-pv-1', link = LINK): Promise<{ result: RunbookResult; loop: string }> {
  const j = job('place', pv, link);
  const result = await handler()(j, ctx(j));
  const loop = (await readlink(at(link))).replace('/dev/', '');
  return { result, loop };
}

const loopNumber = (loop: string): number => Number(loop.replace('loop', ''));
const changingCommands = (r: RunbookResult): string[][] =>
  r.commands
    .map((c) => c.argv)
    .filter((a) => a[0] !== 'losetup' || a[1] !== '--list')
    .filter((a) => a[0] !== 'blockdev');

describe('placing a placeholder on real loop devices', () => {
  it('makes the path a link to a 512-byte loop device numbered 101 or higher', async () => {
    const { result, loop } = await place();
    expect(result.outcome).toBe('succeeded');
    expect(result.verification).toMatchObject({ ok: true });
    expect(loopNumber(loop)).toBeGreaterThanOrEqual(101);
    expect(await readlink(at(LINK))).toBe(`/dev/${loop}`);
    // The absolute link resolves on this machine to the kernel's device node.
    const dev = await stat(`/dev/${loop}`);
    expect(dev.isBlockDevice()).toBe(true);
    expect(execFileSync('blockdev', ['--getsize64', `/dev/${loop}`], { encoding: 'utf8' }).trim()).toBe('512');
    expect(attachedLoops()).toContainEqual({ loop, backFile: at(`${STATE_DIR}/placeholders/local-pv-1.img`) });
  });

  it('refuses a write of 1024 bytes with No space left on device', async () => {
    const { loop } = await place();
    const fd = openSync(`/dev/${loop}`, 'r+');
    const data = Buffer.alloc(1024, 0xab);
    let written = 0;
    let error: NodeJS.ErrnoException | undefined;
    try {
      // The first write() returns a short count (512); only the next one fails, as dd shows.
      while (written < data.length) written += writeSync(fd, data, written, data.length - written, written);
    } catch (err) {
      error = err as NodeJS.ErrnoException;
    } finally {
      closeSync(fd);
    }
    expect(written).toBe(512);
    expect(error?.code).toBe('ENOSPC');
  });

  it('changes nothing when a second job arrives for the same PV', async () => {
    const { loop } = await place();
    const before = attachedLoops();
    const second = await handler()(job(), ctx(job()));
    expect(second.outcome).toBe('nothing-to-do');
    expect(second.summary).toMatch(/already in place/);
    expect(changingCommands(second)).toEqual([]);
    expect(attachedLoops()).toEqual(before);
    expect(await readlink(at(LINK))).toBe(`/dev/${loop}`);
  });

  it('keeps its record across an agent restart', async () => {
    const { loop } = await place();
    const restarted = handler();
    const again = await restarted(job(), ctx(job()));
    expect(again.outcome).toBe('nothing-to-do');
    const { records } = await new PlaceholderStore(STATE_DIR).list(createRealHost({ root }));
    expect(records).toEqual([expect.objectContaining({ pv: 'local-pv-1', path: LINK, wwn: WWN, loop })]);
  });

  it('gives two PVs two different loop devices, both above loop100', async () => {
    const a = await place('local-pv-1', LINK);
    const b = await place('local-pv-2', '/dev/disk/by-id/wwn-0x5000c500feedface');
    expect(a.loop).not.toBe(b.loop);
    expect(Math.min(loopNumber(a.loop), loopNumber(b.loop))).toBeGreaterThanOrEqual(101);
  });

  it('refuses on a node without the opt-in label and changes nothing', async () => {
    const err = await handler({})(job(), ctx(job())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(/has not opted in/);
    expect((err as RefusedError).result).toMatchObject({ outcome: 'refused' });
    await expect(lstat(at(LINK))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses when the disk is present under another name in /sys/block', async () => {
    await mkdir(at('/sys/block/sdq/device'), { recursive: true });
    await writeFile(at('/sys/block/sdq/device/wwid'), `naa.${WWN}\n`);
    const err = await handler()(job(), ctx(job())).catch((e: unknown) => e);
    expect((err as RefusedError).reasons.join()).toMatch(/present as \/dev\/sdq/);
    expect(attachedLoops().filter((a) => a.backFile?.startsWith(root))).toEqual([]);
  });
});

describe('a retried job', () => {
  it('resumes after a failed step without attaching a second loop device', async () => {
    // Block the link's temporary name with a directory: the last step fails after the loop is attached.
    const blocker = at(`/dev/disk/by-id/.wwn-0x${WWN}.volume-medic-tmp`);
    await mkdir(join(blocker, 'x'), { recursive: true });
    const j = job();
    const err = await handler()(j, ctx(j)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunbookFailedError);
    expect((err as RunbookFailedError).result.steps.map((s) => s.status)).toEqual(['done', 'done', 'done', 'done', 'failed']);
    await rm(blocker, { recursive: true });

    const retry = await handler()(j, { ...ctx(j), attempt: 2 });
    expect(retry.outcome).toBe('succeeded');
    expect(retry.steps.map((s) => s.status)).toEqual(['skipped-already-done', 'skipped-already-done', 'skipped-already-done', 'skipped-already-done', 'done']);
    expect(attachedLoops().filter((a) => a.backFile?.startsWith(`${root}/`))).toHaveLength(1);
  });
});

describe('dry-run', () => {
  it('shows the plan and the commands it would run, and changes nothing', async () => {
    // Only this test's loop devices: other test files (and other users of the machine) attach and
    // detach their own meanwhile.
    const ours = () => attachedLoops().filter((a) => a.backFile?.startsWith(`${root}/`));
    const before = ours();
    const j = job();
    const result = await handler()(j, ctx(j, 'dry-run'));
    expect(result.outcome).toBe('planned');
    expect(result.mode).toBe('dry-run');
    expect(result.steps.map((s) => s.status)).toEqual(['would-run', 'would-run', 'would-run', 'would-run', 'would-run']);
    const argvs = result.steps.flatMap((s) => s.commands.map((c) => c.argv));
    const attach = argvs.find((a) => a[0] === 'losetup' && a.length === 3);
    expect(attach?.[1]).toMatch(/\/dev\/loop(\d+)$/);
    expect(loopNumber(attach?.[1]?.replace(/.*\//, '') ?? '')).toBeGreaterThanOrEqual(101);
    expect(attach?.[2]).toBe(at(`${STATE_DIR}/placeholders/local-pv-1.img`));
    expect(argvs.some((a) => a[0] === 'mknod')).toBe(true);
    expect(argvs).toContainEqual(['host:rename', expect.stringContaining('.volume-medic-tmp'), LINK]);
    expect(ours()).toEqual(before);
    await expect(lstat(at(LINK))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(at(STATE_DIR))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('releasing a placeholder', () => {
  it('keeps the placeholder when the detector says the disk is back but it is not: no losetup -d, and the reason names what is missing', async () => {
    const { loop } = await place();
    const r = job('release');
    const err = await handler()(r, ctx(r)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(
      new RegExp(`no block device with WWN ${WWN}.*${LINK} points at /dev/${loop} \\(a loop device: our placeholder\\)`),
    );
    expect(ranLosetupDetach((err as RefusedError).result as RunbookResult)).toBe(false);
    expect(attachedLoops().filter((a) => a.loop === loop)).toHaveLength(1);
    expect(await readlink(at(LINK))).toBe(`/dev/${loop}`);
  });

  it('treats a release job stored before anyone said who asks as a detector’s: no losetup -d while the disk is missing', async () => {
    const { loop } = await place();
    const { release: _who, ...old } = job('release');
    const err = await handler()(old, ctx(old)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(new RegExp(`the disk of PV local-pv-1 is not back.*no block device with WWN ${WWN}`));
    expect(ranLosetupDetach((err as RefusedError).result as RunbookResult)).toBe(false);
    expect(attachedLoops().filter((a) => a.loop === loop)).toHaveLength(1);
  });

  it('keeps the placeholder while sysfs shows the disk but the by-id link still points at our loop device (udev has not run)', async () => {
    const { loop } = await place();
    // The kernel's half of the disk's return, without udev's: the WWN in sysfs and the device node.
    await sysfsShowsDisk();
    execFileSync('mknod', [at('/dev/sdq'), 'b', '8', '240']);
    const r = job('release');
    const err = await handler()(r, ctx(r)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    const why = (err as RefusedError).reasons.join();
    expect(why).toMatch(
      new RegExp(`not true that a /dev/disk/by-id link of WWN ${WWN} leads to it .*${LINK} points at /dev/${loop} \\(a loop device: our placeholder\\)`),
    );
    expect(why).not.toMatch(/no block device with WWN/);
    expect(ranLosetupDetach((err as RefusedError).result as RunbookResult)).toBe(false);
    expect(attachedLoops().filter((a) => a.loop === loop)).toHaveLength(1);
    expect(await readlink(at(LINK))).toBe(`/dev/${loop}`);
  });

  it('keeps the placeholder when the by-id link leads to a node named like the disk that is really our loop device', async () => {
    const { loop } = await place();
    await sysfsShowsDisk();
    // /dev/sdq made with our loop device's number: the name says disk, the node opens the placeholder.
    execFileSync('mknod', [at('/dev/sdq'), 'b', '7', String(loopNumber(loop))]);
    await symlink('../../sdq', at(`/dev/disk/by-id/scsi-3${WWN}`));
    const r = job('release');
    const err = await handler()(r, ctx(r)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(
      new RegExp(`scsi-3${WWN} -> /dev/sdq, but that node is 7:${loopNumber(loop)} and the kernel's /dev/sdq is 8:240`),
    );
    expect(ranLosetupDetach((err as RefusedError).result as RunbookResult)).toBe(false);
    expect(attachedLoops().filter((a) => a.loop === loop)).toHaveLength(1);
  });

  it('detaches the placeholder once the disk is back: a non-loop block device with the WWN behind the by-id link', async () => {
    const { loop } = await place();
    await diskComesBack();
    const r = job('release');
    const result = await handler()(r, ctx(r));
    expect(result.outcome).toBe('succeeded');
    // udev's link is left alone; our loop device, image and record go.
    expect(result.steps.map((s) => s.id)).toEqual([`detach-loop:${loop}:local-pv-1`, 'delete-image:local-pv-1', 'delete-record:local-pv-1']);
    expect(result.steps[0]?.evidence?.map((e) => e.claim)).toEqual(
      expect.arrayContaining([`a block device with WWN ${WWN} is present, and it is not a loop device`, `a /dev/disk/by-id link of WWN ${WWN} leads to it`]),
    );
    expect(await readlink(at(LINK))).toBe('../../sdq');
    expect(attachedLoops().filter((a) => a.loop === loop)).toEqual([]);
    expect(await readFile(at(`${STATE_DIR}/placeholders/local-pv-1.img`)).catch(() => null)).toBeNull();
    expect((await new PlaceholderStore(STATE_DIR).list(createRealHost({ root }))).records).toEqual([]);
  });

  it('removes the link, detaches the loop device and forgets it on an operator’s forced request, saying so', async () => {
    const { loop } = await place();
    const r = job('release', 'local-pv-1', LINK, 'operator');
    const result = await handler()(r, ctx(r));
    expect(result.outcome).toBe('succeeded');
    expect(result.steps.map((s) => s.id)).toEqual([
      `remove-link:${LINK}:${loop}`,
      `detach-loop:${loop}:local-pv-1`,
      'delete-image:local-pv-1',
      'delete-record:local-pv-1',
    ]);
    expect(result.steps[1]?.evidence?.[0]).toMatchObject({
      claim: 'an operator forced the release without the disk check',
      detail: expect.stringMatching(/forced by alice/),
    });
    await expect(lstat(at(LINK))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(attachedLoops().filter((a) => a.loop === loop)).toEqual([]);
  });

  it('keeps a placeholder that a process still has open, even when forced; releases once it lets go', async () => {
    const { loop } = await place();
    // The host's real /proc under the test's root: the runbook sees this machine's processes.
    await symlink('/proc', at('/proc'));
    const fd = openSync(`/dev/${loop}`, 'r');
    const user = spawn('sleep', ['60'], { stdio: [fd, 'ignore', 'ignore'] });
    closeSync(fd);
    try {
      const r = job('release', 'local-pv-1', LINK, 'operator');
      await expect(handler()(r, ctx(r))).rejects.toSatisfy(
        (e: unknown) => e instanceof RefusedError && new RegExp(`/dev/${loop}: pid ${user.pid} \\(sleep\\) has it open`).test(e.message),
      );
      expect(attachedLoops()).toContainEqual({ loop, backFile: at(`${STATE_DIR}/placeholders/local-pv-1.img`) });
      expect(await readlink(at(LINK))).toBe(`/dev/${loop}`);
    } finally {
      user.kill('SIGKILL');
      await new Promise((resolve) => user.once('exit', resolve));
    }
    const r = job('release', 'local-pv-1', LINK, 'operator');
    expect((await handler()(r, ctx(r))).outcome).toBe('succeeded');
    expect(attachedLoops().filter((a) => a.loop === loop)).toEqual([]);
  });

  it('releases by itself when the disk with the same WWN comes back (a place job finds it back)', async () => {
    const { loop } = await place();
    await diskComesBack(`/dev/disk/by-id/scsi-3${WWN}`);
    const result = await handler()(job(), ctx(job()));
    expect(result.outcome).toBe('succeeded');
    expect(result.summary).toMatch(/is back/);
    expect(attachedLoops().filter((a) => a.loop === loop)).toEqual([]);
  });

  it('never detaches a loop device it did not attach', async () => {
    const { loop } = await place();
    // Someone detaches ours and attaches their own file to the same number.
    execFileSync('losetup', ['-d', `/dev/${loop}`]);
    const foreign = join(root, 'foreign.img');
    await writeFile(foreign, Buffer.alloc(4096));
    execFileSync('losetup', [`/dev/${loop}`, foreign]);
    const r = job('release', 'local-pv-1', LINK, 'operator');
    const result = await handler()(r, ctx(r));
    expect(result.steps.map((s) => s.id)).not.toContain(`detach-loop:${loop}:local-pv-1`);
    expect(attachedLoops()).toContainEqual({ loop, backFile: foreign });
  });

  // Issue 20, item 7: the record's image path is input (a file on the host); only the image in
  // STATE_DIR that we made is ever attached or deleted.
  it('refuses a release whose record names an image outside STATE_DIR: that file stays, nothing is detached', async () => {
    const { loop } = await place();
    await mkdir(at('/etc'), { recursive: true });
    await writeFile(at('/etc/precious.img'), 'keep me');
    const recordFile = at(`${STATE_DIR}/placeholders/local-pv-1.json`);
    const record = JSON.parse(await readFile(recordFile, 'utf8'));
    await writeFile(recordFile, JSON.stringify({ ...record, image: '/etc/precious.img' }));
    const r = job('release', 'local-pv-1', LINK, 'operator');
    const err = await handler()(r, ctx(r)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(/names the image \/etc\/precious\.img, not \/var\/lib\/volume-medic\/placeholders\/local-pv-1\.img/);
    expect(await readFile(at('/etc/precious.img'), 'utf8')).toBe('keep me');
    expect(attachedLoops().filter((a) => a.loop === loop)).toHaveLength(1);
  });

  it('refuses to place an image when the placeholders directory is a symlink out of STATE_DIR: nothing is created there', async () => {
    await mkdir(at('/elsewhere'), { recursive: true });
    await mkdir(at(STATE_DIR), { recursive: true });
    await symlink('../../../elsewhere', at(`${STATE_DIR}/placeholders`));
    const err = await handler()(job(), ctx(job())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(/resolves to \/elsewhere, outside \/var\/lib\/volume-medic\/placeholders/);
    expect(execFileSync('ls', ['-A', at('/elsewhere')], { encoding: 'utf8' })).toBe('');
    expect(attachedLoops().filter((a) => a.backFile?.startsWith(root))).toEqual([]);
  });

  it('reports that the PV must be recreated when a disk with a new WWN replaced it', async () => {
    await place();
    await mkdir(at('/sys/block/sdr/device'), { recursive: true });
    await writeFile(at('/sys/block/sdr/device/wwid'), 'naa.5000c500cafef00d\n');
    const err = await handler()(job(), ctx(job())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).reasons.join()).toMatch(/the PV must be recreated/);
  });
});
