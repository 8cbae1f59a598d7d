// Issue 50 on a real kernel: Debian 12's 6.1 under qemu, a scsi_debug disk that vanishes (deleted
// from the SCSI bus; udev removes its /dev/disk/by-id link) and comes back (a rescan of its host).
// The real placeholder runbook, acting on the guest, stands a 512-byte loop device in at the PV's
// path; the agent's report (workers/node-agent/placeholder-report.ts, read from the guest) goes to
// a real receiver and Redis on this machine, and the chart's check (`volume-medic uninstall-check`)
// refuses naming the PV. The disk comes back while a process in the guest holds the loop device
// open: `prepare-uninstall`, forced or not, asks for no release of it. Once the process is gone,
// `prepare-uninstall` asks for the checked release, the node agent runs it on the guest (the disk
// check and the holders again, on the kernel's own view) and the check passes.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writePlaceholderReport } from '../../src/adapters/jobstore/placeholder-reports.ts';
import { knownQueuesKey } from '../../src/adapters/redis/known-queues.ts';
import type { LocalPvPlaceholderJob } from '../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { run } from '../../src/control/cli/main.ts';
import { startReceiver, type Receiver } from '../../src/control/receiver.ts';
import type { FileInfo, Host } from '../../workers/host/host.ts';
import { createNodeAgent } from '../../workers/node-agent/agent.ts';
import { placeholderReport } from '../../workers/node-agent/placeholder-report.ts';
import { createLocalPvPlaceholder } from '../../workers/runbooks/local-pv-placeholder/handler.ts';
import { DEFAULT_OPT_IN_LABEL, InMemoryNodeLabels } from '../../workers/runbooks/local-pv-placeholder/node-labels.ts';
import { testConfig } from '../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';
import { getJson } from '../testkit/payloads.ts';
import { startOperators, type Operators } from '../testkit/operators.ts';
import { guestHost } from './guest-host.ts';
import { waitInGuest } from './guest-wait.ts';
import { labSkipReason } from './image.ts';
import { settleUdev } from './scsi-debug-scenario.ts';
import { bootLabVm, type LabVm } from './vm.ts';

const skipReason = labSkipReason();
if (skipReason) console.warn(`\n*** LAB TIER SKIPPED (uninstall-placeholders): ${skipReason} ***\n`);

const NODE = 'lab-node';
const PV = 'local-pv-lab';
const STATE_DIR = '/var/lib/volume-medic';
const log = (line: string) => console.log(line);

/**
 * The snapshot of guest-host.ts does not cover /dev's device nodes (loopN, sdX) that the
 * placeholder runbook follows its by-id link to: those are asked of the guest one by one.
 */
function withDevNodes(vm: LabVm, inner: Host): Host {
  const node = (p: string) => /^\/dev\/[a-z]+[0-9]*$/.test(p);
  return {
    ...inner,
    async lstat(p): Promise<FileInfo | null> {
      if (!node(p)) return inner.lstat(p);
      // "<major hex> <minor hex> <kind>", e.g. "7 65 block special file".
      const r = await vm.run(['stat', '-c', '%t %T %F', p]);
      if (r.code !== 0) return null;
      const [ma, mi, ...kind] = r.stdout.trim().split(' ');
      const what = kind.join(' ');
      if (what === 'block special file') return { type: 'block', size: 0, major: Number.parseInt(ma!, 16), minor: Number.parseInt(mi!, 16) };
      if (what === 'symbolic link') return { type: 'symlink', size: 0 };
      if (what === 'character special file') return { type: 'char', size: 0, major: Number.parseInt(ma!, 16), minor: Number.parseInt(mi!, 16) };
      return { type: what === 'directory' ? 'dir' : 'file', size: 0 };
    },
  };
}

describe.skipIf(skipReason !== null)('uninstall with a Local PV placeholder on a real kernel', { timeout: 600_000 }, () => {
  let vm: LabVm;
  let host: Host;
  let receiver: Receiver;
  let ops: Operators;
  let redis: Redis;
  let TOKEN = '';
  let disk = '';
  let scsiHost = '';
  let link = '';
  let loop = '';
  const prefix = uniquePrefix('lpv-lab-uninstall');
  const stats = { snapshots: 0, commands: 0 };

  const handler = () =>
    createLocalPvPlaceholder({
      host,
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
  /** What the agent's report loop does every 30 s; a fresh look (the guest host's snapshot is taken again after any command). */
  const report = async () => {
    await host.run(['true']);
    await writePlaceholderReport(redis, prefix, nodeQueueName(NODE), await placeholderReport(host, STATE_DIR, NODE, () => new Date()));
  };
  const jobIds = (text: string): string[] => [...text.matchAll(/volume-medic job (\S+)/g)].map((m) => m[1]!);
  const agentRuns = async (ids: string[]) => {
    const agent = createNodeAgent({
      config: testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, nodeName: NODE, runbookModes: { 'local-pv-placeholder': 'enforce' } }),
      log: pino({ level: 'silent' }),
      registry: { 'local-pv-placeholder': handler() },
    });
    try {
      for (const id of ids) {
        for (let i = 0; ; i++) {
          const job = await getJson(`${receiver.url}/v1/jobs/${encodeURIComponent(id)}`, TOKEN);
          if (job.state === 'completed' || job.state === 'failed') {
            log(`job ${id}: ${job.state} ${JSON.stringify(job.result?.outcome ?? job.failedReason ?? '')}`);
            break;
          }
          if (i > 600) throw new Error(`job ${id} did not finish`);
          await new Promise((res) => setTimeout(res, 200));
        }
      }
    } finally {
      await agent.close();
    }
  };
  const attachedLoops = async () =>
    (await vm.runOk(['losetup', '--list', '--noheadings', '--output', 'NAME'])).stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);

  beforeAll(async () => {
    vm = await bootLabVm({ log });
    host = withDevNodes(vm, guestHost(vm, stats, STATE_DIR));
    await vm.runOk(['modprobe', 'loop']);
    // One disk without multipath: multipathd would hold it (a map over it) and the delete would wait for the map.
    await vm.runOk(
      `printf 'blacklist {\\n\\tdevice {\\n\\t\\tvendor "Linux"\\n\\t\\tproduct "scsi_debug"\\n\\t}\\n}\\n' >> /etc/multipath.conf && multipathd reconfigure`,
    );
    await vm.runOk(['modprobe', 'scsi_debug', 'dev_size_mb=8', 'num_tgts=1', 'add_host=1', 'vpd_use_hostno=0']);
    await settleUdev(vm);
    disk = (await vm.runOk('grep -l scsi_debug /sys/block/sd*/device/model | cut -d/ -f4')).stdout.trim().split('\n')[0]!;
    const wwid = (await vm.runOk(['cat', `/sys/block/${disk}/device/wwid`])).stdout.trim();
    const wwn = /^naa\.([0-9a-f]+)$/.exec(wwid)?.[1];
    expect(wwn, wwid).toBeDefined();
    link = `/dev/disk/by-id/wwn-0x${wwn}`;
    await waitInGuest(vm, `udev's ${link}`, ['readlink', link], (out) => out.includes(disk), { timeoutMs: 60_000 });
    // The SCSI host scsi_debug registered (it stays when the disk is deleted: a rescan of it brings the disk back).
    scsiHost = (await vm.runOk('grep -l scsi_debug /sys/class/scsi_host/host*/proc_name | cut -d/ -f5')).stdout.trim().split('\n')[0]!;
    log(`disk ${disk} (${wwid}) on ${scsiHost}: ${link}`);

    ops = await startOperators();
    TOKEN = ops.token('alice');
    redis = new Redis(redisUrl());
    await redis.sadd(knownQueuesKey(prefix), nodeQueueName(NODE));
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix }), { operatorKubeConfig: ops.api.kubeConfig() });
  }, 400_000);

  afterAll(async () => {
    log(`guest host: ${stats.snapshots} snapshots, ${stats.commands} commands`);
    await receiver?.close();
    await ops?.close();
    redis?.disconnect();
    await dropPrefix(prefix);
    await vm?.shutdown();
  });

  it('the disk vanishes, the runbook places a placeholder, and the check refuses naming it', async () => {
    await vm.runOk(['sh', '-c', `echo 1 > /sys/block/${disk}/device/delete`]);
    await settleUdev(vm);
    await waitInGuest(vm, `${link} removed by udev`, ['sh', '-c', `test -e ${link} || echo gone`], (out) => out.includes('gone'), { timeoutMs: 60_000 });
    const j: LocalPvPlaceholderJob = {
      version: 1,
      key: 'lpv_lab_place_0123456789ab',
      runbook: 'local-pv-placeholder',
      action: 'place',
      target: { node: NODE, pv: PV, path: link },
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
    loop = (await vm.runOk(['readlink', link])).stdout.trim().replace('/dev/', '');
    expect(loop).toMatch(/^loop\d+$/);
    expect((await vm.runOk(['blockdev', '--getsize64', `/dev/${loop}`])).stdout.trim()).toBe('512');
    await report();
    const check = await cli('uninstall-check');
    expect(check.code).toBe(1);
    expect(check.text).toContain(`node ${NODE}: PV ${PV} (${link} -> /dev/${loop}`);
    expect(check.text).toContain('volume-medic prepare-uninstall');
  });

  it('the disk comes back while a process holds the placeholder: prepare-uninstall releases nothing, forced or not', async () => {
    await vm.runOk(`setsid bash -c 'echo $$ > /run/holder.pid; exec 3</dev/${loop}; exec sleep 900' </dev/null >/dev/null 2>&1 &`);
    await waitInGuest(vm, 'the holder', ['cat', '/run/holder.pid'], (out) => /^\d+/.test(out.trim()), { timeoutMs: 10_000 });
    const pid = (await vm.runOk(['cat', '/run/holder.pid'])).stdout.trim();
    await vm.runOk(['sh', '-c', `echo '- - -' > /sys/class/scsi_host/${scsiHost}/scan`]);
    await settleUdev(vm);
    await waitInGuest(vm, 'the disk back', ['sh', '-c', `ls /sys/block | grep -c '^sd'`], (out) => Number(out.trim()) >= 1, { timeoutMs: 60_000 });
    await report();
    const list = await cli('placeholders');
    // The disk is back (its WWN in sysfs) and the holder named.
    expect(list.text).toMatch(new RegExp(`${PV}\\s+${link}\\s+${loop}\\s+\\S+\\s+yes\\s+pid ${pid} \\(sleep\\) has it open`));
    for (const argv of [['prepare-uninstall'], ['prepare-uninstall', '--force', '--why', 'lab']]) {
      const r = await cli(...argv);
      expect(r.code, argv.join(' ')).toBe(1);
      expect(jobIds(r.text), argv.join(' ')).toEqual([]);
      expect(r.text).toMatch(new RegExp(`PV ${PV} .*stays, still in use: pid ${pid} \\(sleep\\) has it open`));
    }
    expect(await attachedLoops()).toContain(`/dev/${loop}`);
    expect((await cli('uninstall-check')).code).toBe(1);
  });

  it('once the process is gone, prepare-uninstall releases it (the agent verifies the disk is back) and the check passes', async () => {
    await vm.runOk(['sh', '-c', 'kill -9 "$(cat /run/holder.pid)"']);
    await report();
    const r = await cli('prepare-uninstall');
    expect(r.text).toMatch(new RegExp(`PV ${PV} .*disk back, release asked for`));
    await agentRuns(jobIds(r.text));
    expect(await attachedLoops()).not.toContain(`/dev/${loop}`);
    await report();
    expect(await cli('uninstall-check')).toMatchObject({ code: 0 });
  });
});
