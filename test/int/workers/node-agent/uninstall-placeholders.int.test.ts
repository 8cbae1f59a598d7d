import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writePlaceholderReport } from '../../../../src/adapters/jobstore/placeholder-reports.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import type { LocalPvPlaceholderJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { run } from '../../../../src/control/cli/main.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { placeholderReport } from '../../../../workers/node-agent/placeholder-report.ts';
import { createRealHost } from '../../../../workers/host/real-host.ts';
import { createLocalPvPlaceholder } from '../../../../workers/runbooks/local-pv-placeholder/handler.ts';
import { parseLosetupList } from '../../../../workers/runbooks/local-pv-placeholder/loops.ts';
import { DEFAULT_OPT_IN_LABEL, InMemoryNodeLabels } from '../../../../workers/runbooks/local-pv-placeholder/node-labels.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { getJson } from '../../../testkit/payloads.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';

// Issue 50 on REAL loop devices (this machine's kernel; the host root is a temporary folder, its
// /proc the real one): the runbook places two placeholders, the agent's report goes to Redis under
// its queue, and the chart's check (`uninstall-check`) refuses naming them. Both disks come back;
// a process holds one placeholder open. `prepare-uninstall` asks for the release of the free one
// only, and the node agent runs it (the disk check and the holders again) so the check names only
// the held one; `--force` does not release a held one either. Once the process lets go, the next
// `prepare-uninstall` releases it and the check passes.

const NODE = 'uninstall-node';
const STATE_DIR = '/var/lib/volume-medic';
const WWN = { a: '5000c500aaaa0001', b: '5000c500bbbb0002' };
const LINK = { a: `/dev/disk/by-id/wwn-0x${WWN.a}`, b: `/dev/disk/by-id/wwn-0x${WWN.b}` };
const PV = { a: 'local-pv-free', b: 'local-pv-held' };

describe('uninstall with Local PV placeholders, on real loop devices', { timeout: 120_000 }, () => {
  const prefix = uniquePrefix('lpv-uninstall');
  let root = '';
  let receiver: Receiver;
  let ops: Operators;
  let redis: Redis;
  let TOKEN = '';
  let holder: ChildProcess | undefined;
  const at = (p: string): string => join(root, p);
  const host = () => createRealHost({ root });
  const attached = () => parseLosetupList(execFileSync('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' }));
  const ours = () => attached().filter((a) => a.backFile?.startsWith(`${root}/`));
  const handler = () =>
    createLocalPvPlaceholder({
      host: host(),
      stateDir: STATE_DIR,
      nodeLabels: new InMemoryNodeLabels({ [NODE]: { [DEFAULT_OPT_IN_LABEL.key]: DEFAULT_OPT_IN_LABEL.value } }),
    });
  const cli = async (...argv: string[]) => {
    const lines: string[] = [];
    const code = await run(
      argv,
      { VOLUME_MEDIC_URL: receiver.url, VOLUME_MEDIC_OPERATOR_TOKEN: TOKEN },
      (s) => lines.push(s),
      (s) => lines.push(s),
    );
    return { code, text: lines.join('\n') };
  };
  /** What the agent's report loop does every 30 s. */
  const report = async () => writePlaceholderReport(redis, prefix, nodeQueueName(NODE), await placeholderReport(host(), STATE_DIR, NODE, () => new Date()));
  /** The node agent takes what waits on its queue, then stops. */
  const agentRuns = async (jobIds: string[]) => {
    const agent = createNodeAgent({
      config: testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, nodeName: NODE, runbookModes: { 'local-pv-placeholder': 'enforce' } }),
      log: pino({ level: 'silent' }),
      registry: { 'local-pv-placeholder': handler() },
    });
    try {
      for (const id of jobIds) {
        for (let i = 0; ; i++) {
          const job = await getJson(`${receiver.url}/v1/jobs/${encodeURIComponent(id)}`, TOKEN);
          if (job.state === 'completed' || job.state === 'failed') break;
          if (i > 300) throw new Error(`job ${id} did not finish`);
          await new Promise((res) => setTimeout(res, 100));
        }
      }
    } finally {
      await agent.close();
    }
  };
  const jobIds = (text: string): string[] => [...text.matchAll(/volume-medic job (\S+)/g)].map((m) => m[1]!);

  async function place(pv: string, link: string): Promise<string> {
    const j: LocalPvPlaceholderJob = {
      version: 1,
      key: `lpv_${pv}_place_0123456789ab`,
      runbook: 'local-pv-placeholder',
      action: 'place',
      target: { node: NODE, pv, path: link },
      evidence: [{ source: 'npd', summary: 'LocalDiskLost', raw: {} }],
    };
    const r = await handler()(j, {
      jobId: j.key,
      attempt: 1,
      mode: 'enforce',
      ranOn: NODE,
      log: pino({ level: 'silent' }),
      signal: new AbortController().signal,
    });
    expect(r.outcome).toBe('succeeded');
    return (await readlink(at(link))).replace('/dev/', '');
  }

  /** The disk comes back as the kernel and udev show it (sysfs, a block node of an sd number, udev's link). */
  async function diskComesBack(name: string, minor: number, wwn: string, link: string): Promise<void> {
    await mkdir(at(`/sys/block/${name}/device`), { recursive: true });
    await writeFile(at(`/sys/block/${name}/device/wwid`), `naa.${wwn}\n`);
    await writeFile(at(`/sys/block/${name}/dev`), `8:${minor}\n`);
    execFileSync('mknod', [at(`/dev/${name}`), 'b', '8', String(minor)]);
    await rm(at(link), { force: true });
    await symlink(`../../${name}`, at(link));
  }

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'vm-lpv-uninstall-'));
    await mkdir(at('/dev/disk/by-id'), { recursive: true });
    await mkdir(at('/sys/block'), { recursive: true });
    await symlink('/proc', at('/proc'));
    ops = await startOperators();
    TOKEN = ops.token('alice');
    redis = new Redis(redisUrl());
    await redis.sadd(knownQueuesKey(prefix), nodeQueueName(NODE));
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix }), { operatorKubeConfig: ops.api.kubeConfig() });
  });
  afterAll(async () => {
    holder?.kill('SIGKILL');
    for (const a of ours()) execFileSync('losetup', ['-d', `/dev/${a.loop}`]);
    await receiver?.close();
    await ops?.close();
    redis?.disconnect();
    await dropPrefix(prefix);
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('refuses the uninstall while placeholders are attached, naming each and prepare-uninstall', async () => {
    await place(PV.a, LINK.a);
    await place(PV.b, LINK.b);
    expect(ours()).toHaveLength(2);
    await report();
    const r = await cli('uninstall-check');
    expect(r.code).toBe(1);
    expect(r.text).toMatch(new RegExp(`node ${NODE}: PV ${PV.a} \\(${LINK.a} -> /dev/loop\\d+`));
    expect(r.text).toContain(`PV ${PV.b}`);
    expect(r.text).toContain('volume-medic prepare-uninstall');
  });

  it('prepare-uninstall releases the one whose disk is back and that nothing holds; the held one stays, named with its holder', async () => {
    const loopB = (await readlink(at(LINK.b))).replace('/dev/', '');
    const fd = openSync(`/dev/${loopB}`, 'r');
    holder = spawn('sleep', ['120'], { stdio: [fd, 'ignore', 'ignore'] });
    closeSync(fd);
    await diskComesBack('sdq', 240, WWN.a, LINK.a);
    await diskComesBack('sdr', 241, WWN.b, LINK.b);
    await report();
    const r = await cli('prepare-uninstall');
    expect(r.code).toBe(1);
    expect(r.text).toMatch(new RegExp(`PV ${PV.a} .*disk back, release asked for`));
    expect(r.text).toMatch(new RegExp(`PV ${PV.b} .*stays, still in use: pid ${holder.pid} \\(sleep\\) has it open`));
    await agentRuns(jobIds(r.text));
    expect(ours().map((a) => a.loop)).toEqual([loopB]);
    await report();
    const check = await cli('uninstall-check');
    expect(check.code).toBe(1);
    expect(check.text).not.toContain(PV.a);
    expect(check.text).toContain(`PV ${PV.b}`);
  });

  it('never releases a held placeholder, not even with --force', async () => {
    const r = await cli('prepare-uninstall', '--force', '--why', 'cluster torn down');
    expect(r.code).toBe(1);
    expect(jobIds(r.text)).toEqual([]);
    expect(r.text).toMatch(new RegExp(`PV ${PV.b} .*stays, still in use`));
    expect(ours()).toHaveLength(1);
  });

  it('once the process lets go, prepare-uninstall releases it and the check passes', async () => {
    holder?.kill('SIGKILL');
    await new Promise((res) => holder?.once('exit', res));
    holder = undefined;
    await report();
    const r = await cli('prepare-uninstall');
    expect(r.text).toMatch(new RegExp(`PV ${PV.b} .*disk back, release asked for`));
    await agentRuns(jobIds(r.text));
    expect(ours()).toEqual([]);
    await report();
    expect(await cli('uninstall-check')).toMatchObject({ code: 0 });
    expect(await cli('prepare-uninstall')).toMatchObject({ code: 0, text: expect.stringContaining('nothing stops an uninstall') });
  });
});
