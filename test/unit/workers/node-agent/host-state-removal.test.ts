import { describe, expect, it } from 'vitest';
import { removeHostStateIfUninstalling, unremovable } from '../../../../workers/node-agent/host-state-removal.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';

// nodeAgent.removeHostState: STATE_DIR leaves the node at the agent's last stop only when the
// uninstall marked its queue, and only when nothing in it still matters; otherwise it stays and
// the log says why.

const STATE = '/var/lib/volume-medic';

function node(): FakeHost {
  const host = new FakeHost();
  host.put(`${STATE}/seen-work.json`, '{}');
  host.put(
    `${STATE}/journal/lpv_local-pv-1_0123456789ab.json`,
    JSON.stringify({ version: 1, jobId: 'x', runbook: 'local-pv-placeholder', finished: true, done: [] }),
  );
  // rm -rf removes what is under the path (the fake's file system is a map of paths).
  host.on(['rm'], (argv) => {
    const dir = argv.at(-1)!;
    for (const p of [...host.nodes.keys()]) if (p === dir || p.startsWith(`${dir}/`)) host.nodes.delete(p);
    return { exitCode: 0 };
  });
  return host;
}

const remove = (host: FakeHost, o: { enabled?: boolean; marked?: boolean; stateDir?: string } = {}) => {
  const lines: string[] = [];
  const log = { info: (_: object, m: string) => void lines.push(m), warn: (_: object, m: string) => void lines.push(m) };
  return removeHostStateIfUninstalling({
    host,
    stateDir: o.stateDir ?? STATE,
    enabled: o.enabled ?? true,
    marked: () => o.marked ?? true,
    log,
  }).then((r) => ({ r, lines }));
};

describe('removing the host state on an uninstall', () => {
  it('does nothing unless configured and the queue is marked (a rolling update is never marked)', async () => {
    for (const o of [{ enabled: false }, { marked: false }]) {
      const host = node();
      expect((await remove(host, o)).r).toBe('not-asked');
      expect(host.commands).toEqual([]);
    }
  });

  it('removes STATE_DIR when only finished journals and replay memory are in it', async () => {
    const host = node();
    const { r, lines } = await remove(host);
    expect(r).toBe('removed');
    expect(host.commands).toEqual([['rm', '-rf', '--one-file-system', '--', STATE]]);
    expect(lines).toEqual([`uninstall: removed the host state directory ${STATE}`]);
  });

  it('keeps it, saying why, with a placeholder file, an intent record or an open journal in it', async () => {
    const cases: Array<[string, (h: FakeHost) => void, RegExp]> = [
      [
        'placeholder',
        (h) => void h.put(`${STATE}/placeholders/local-pv-1.img`, ''),
        /placeholder files: local-pv-1\.img \(run volume-medic prepare-uninstall\)/,
      ],
      ['intent', (h) => void h.put(`${STATE}/intents/residual-multipath/3600a0b8.json`, '{broken'), /intent records of a residual cleanup: \S*3600a0b8/],
      [
        'open journal',
        (h) => void h.put(`${STATE}/journal/rmc_x_0123456789ab.json`, JSON.stringify({ version: 1, jobId: 'y', runbook: 'r', finished: false, done: [] })),
        /open step journals: rmc_x_0123456789ab\.json/,
      ],
      ['unreadable journal', (h) => void h.put(`${STATE}/journal/rmc_y_0123456789ab.json`, '{'), /open step journals: rmc_y_0123456789ab\.json/],
    ];
    for (const [what, add, why] of cases) {
      const host = node();
      add(host);
      const { r, lines } = await remove(host);
      expect(r, what).toBe('kept');
      expect(host.commands, what).toEqual([]);
      expect(lines[0], what).toMatch(/stays on this node: /);
      expect(lines[0], what).toMatch(why);
    }
  });

  it('never removes a system directory, whatever STATE_DIR says', async () => {
    for (const dir of ['/', '/var/lib', '/var/lib/../lib', 'relative/dir']) expect(unremovable(dir), dir).not.toBeNull();
    expect(unremovable(STATE)).toBeNull();
    const host = node();
    expect((await remove(host, { stateDir: '/var/lib' })).r).toBe('kept');
    expect(host.commands).toEqual([]);
  });
});
