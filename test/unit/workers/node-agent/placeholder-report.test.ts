import { describe, expect, it } from 'vitest';
import { PlaceholderReport } from '../../../../src/core/catalogue/placeholder-report.ts';
import { placeholderReport, startPlaceholderReports } from '../../../../workers/node-agent/placeholder-report.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';

// The agent's report of its placeholders: read from the records in STATE_DIR, losetup and sysfs;
// what it could not read is "not read", never "no".

const STATE = '/var/lib/volume-medic';
const WWN = '5000c500a1b2c3d4';
const NOW = () => new Date('2026-12-07T14:00:00.000Z');

function node(): FakeHost {
  const host = new FakeHost();
  host.put(
    `${STATE}/placeholders/local-pv-1.json`,
    JSON.stringify({
      version: 1,
      pv: 'local-pv-1',
      path: `/dev/disk/by-id/wwn-0x${WWN}`,
      wwn: WWN,
      loop: 'loop101',
      image: `${STATE}/placeholders/local-pv-1.img`,
      createdAt: '2026-12-01T03:00:00.000Z',
      jobId: 'lpv_local-pv-1_0123456789ab',
      disksAtPlacement: [],
    }),
  );
  return host;
}

describe("a node agent's placeholder report", () => {
  it('is empty on a node without records, and runs no command there', async () => {
    const host = new FakeHost();
    const r = await placeholderReport(host, STATE, 'worker-1', NOW);
    expect(r).toEqual({ version: 1, node: 'worker-1', at: '2026-12-07T14:00:00.000Z', placeholders: [], unreadable: [] });
    expect(host.commands).toEqual([]);
  });

  it('names an unreadable record file', async () => {
    const host = node();
    host.put(`${STATE}/placeholders/local-pv-2.json`, '{not json');
    expect((await placeholderReport(host, STATE, 'worker-1', NOW)).unreadable).toEqual(['local-pv-2.json']);
  });

  it('says "not read" for attachment and holders when losetup fails, and whether the disk is back from sysfs', async () => {
    const host = node();
    host.put(`/sys/block/sdq/device/wwid`, `naa.${WWN}\n`);
    host.on(['losetup', '--list', '--json', '--output', 'NAME,BACK-FILE'], { exitCode: 1, stderr: 'boom' });
    const r = await placeholderReport(host, STATE, 'worker-1', NOW);
    expect(PlaceholderReport.safeParse(r).success).toBe(true);
    expect(r.placeholders).toEqual([
      {
        pv: 'local-pv-1',
        path: `/dev/disk/by-id/wwn-0x${WWN}`,
        loop: 'loop101',
        since: '2026-12-01T03:00:00.000Z',
        attached: null,
        diskBack: true,
        heldBy: null,
      },
    ]);
  });

  it('reports a detached record as held by nothing, the disk not back', async () => {
    const host = node();
    host.on(['losetup', '--list', '--json', '--output', 'NAME,BACK-FILE'], { stdout: '' });
    const [p] = (await placeholderReport(host, STATE, 'worker-1', NOW)).placeholders;
    expect(p).toMatchObject({ attached: false, diskBack: false, heldBy: [] });
  });

  it('reports what holds an attached placeholder: a process with the loop device open', async () => {
    const host = node();
    host.on(['losetup', '--list', '--json', '--output', 'NAME,BACK-FILE'], {
      stdout: JSON.stringify({ loopdevices: [{ name: '/dev/loop101', 'back-file': `${STATE}/placeholders/local-pv-1.img` }] }),
    });
    host.put('/proc/4242/fd/3', { type: 'symlink', target: '/dev/loop101' });
    host.put('/proc/4242/stat', '4242 (sleep) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0');
    const [p] = (await placeholderReport(host, STATE, 'worker-1', NOW)).placeholders;
    expect(p).toMatchObject({ attached: true, diskBack: false, heldBy: ['pid 4242 (sleep) has it open'] });
  });

  it('publishes at start and remembers the uninstall mark it reads, keeping the last one when a read fails', async () => {
    const published: PlaceholderReport[] = [];
    let reads = 0;
    const reports = startPlaceholderReports({
      host: new FakeHost(),
      stateDir: STATE,
      node: 'worker-1',
      publish: async (r) => void published.push(r),
      intervalMs: 5,
      readMark: async () => {
        if (reads++ === 0) return true;
        throw new Error('redis stopping');
      },
      now: NOW,
      log: { info: () => undefined, warn: () => undefined },
    });
    await new Promise((done) => setTimeout(done, 40));
    await reports.stop();
    expect(reads).toBeGreaterThan(1);
    expect(published.length).toBeGreaterThan(1);
    expect(reports.marked()).toBe(true);
  });

  it('stops within a second even while a report waits on a Redis that does not answer (SIGTERM must end the agent)', async () => {
    const reports = startPlaceholderReports({
      host: new FakeHost(),
      stateDir: STATE,
      node: 'worker-1',
      publish: () => new Promise<void>(() => {}),
      intervalMs: 60_000,
      log: { warn: () => {}, info: () => {} },
    });
    const t0 = Date.now();
    await reports.stop();
    expect(Date.now() - t0).toBeLessThan(2_000);
  });
});
