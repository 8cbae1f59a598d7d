import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../../src/core/catalogue/jobs.ts';
import { isMapName } from '../../../../../src/core/catalogue/names.ts';
import type { RunbookResult } from '../../../../../src/core/catalogue/result.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { ParkedError } from '../../../../../workers/engine/gate.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import { InMemoryAttachedVolumes } from '../../../../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createStepExecutor } from '../../../../../workers/runbooks/residual-multipath-cleanup/execute-step.ts';
import { createResidualMultipathCleanup } from '../../../../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { IntentRecord } from '../../../../../workers/runbooks/residual-multipath-cleanup/intents.ts';
import { DEFAULT_POLICY } from '../../../../../workers/runbooks/residual-multipath-cleanup/policy.ts';
import type { ResidualStep } from '../../../../../workers/runbooks/residual-multipath-cleanup/step.ts';
import { MultipathNode, type MapSpec } from '../../../../testkit/multipath-node.ts';
import { NO_KUBE_WRITES } from '../../../../../workers/kube-writes/kube-writes.ts';

// Map names come from `multipath -ll`, dmsetup and sysfs, and go into argv (`multipath -f <map>`,
// `dmsetup message <map> ...`). Device-mapper allows nearly any name, and multipath.conf may alias
// a map to anything: a name that is not plain (an option like `-f`/`--help`, spaces, `;`) is
// refused where it enters (observe: the map's evidence is contradicted) and again before argv.

const T0 = Date.UTC(2026, 11, 4);
const residual: MapSpec = {
  paths: [true, true],
  queueing: false,
  holder: false,
  mounted: false,
  opener: 'none',
  attached: false,
  probe: 'io-error',
};

async function run(node: MultipathNode): Promise<RunbookResult> {
  const clock = { t: 0 };
  const handler = createResidualMultipathCleanup({
    host: node,
    stateDir: '/var/lib/volume-medic',
    attached: new InMemoryAttachedVolumes({ sim: [] }),
    policy: { openCountWaitMs: 1_000 },
    now: () => new Date(T0 + clock.t),
    sleep: async (ms) => void (clock.t += ms),
  });
  const job: ResidualMultipathJob = {
    version: 1,
    key: 'residual_sim_names',
    runbook: 'residual-multipath-cleanup',
    target: { node: 'sim' },
    evidence: [{ source: 'api', summary: 'sim', raw: {} }],
  };
  for (let i = 0; ; i++) {
    try {
      return await handler(job, {
        jobId: job.key,
        attempt: 1,
        mode: 'enforce',
        ranOn: 'sim',
        log: pino({ level: 'silent' }),
        signal: new AbortController().signal,
      });
    } catch (err) {
      if (err instanceof ParkedError && err.parking.reason === 'evidence' && i < 4) {
        clock.t = (err.parking.until as Date).getTime() - T0;
        continue;
      }
      throw err;
    }
  }
}

describe('map names on their way to argv', () => {
  it('takes aliases, WWIDs and user_friendly_names; refuses options, separators and anything else', () => {
    for (const ok of [
      'mpatha',
      'mpathzz',
      '36001405a1b2c3d4e5f60718293a4b5c6',
      'eui.0025385b71b0a1c2',
      'SATA_ST1000DM003-1ER162_Z4Y8',
      'oradata_01',
      '3600a0b8:part1',
    ])
      expect(isMapName(ok), ok).toBe(true);
    for (const bad of ['-f', '--help', '-', '.hidden', 'mpath a', 'mpatha;reboot', 'a/b', '../x', '', 'a'.repeat(129), 'mpath\u001b[2J', 'm$(id)'])
      expect(isMapName(bad), bad).toBe(false);
  });

  it('leaves a residual map with a shell-ish alias (mpath;reboot) alone, and still cleans the plainly named one beside it', async () => {
    const node = new MultipathNode([residual, residual], { names: ['mpath;reboot', 'mpathb'] });
    const r = await run(node);
    expect(node.destructive.filter((d) => d.map === 0)).toEqual([]);
    expect(node.has(node.maps[0]!.dm)).toBe(true);
    expect(node.destructive.some((d) => d.map === 1 && d.kind === 'flush')).toBe(true);
    expect(r.commands.filter((c) => c.argv.includes('mpath;reboot'))).toEqual([]);
    expect(JSON.stringify(r)).toContain('not a plain map name');
  });

  it.each(['--help', '-f'])('acts on nothing when a map is named like an option (%s): the listing itself is refused', async (name) => {
    const node = new MultipathNode([residual, residual], { names: [name, 'mpathb'] });
    await expect(run(node)).rejects.toBeInstanceOf(RefusedError);
    expect(node.destructive).toEqual([]);
    expect(node.commands.filter((argv) => argv.slice(1).includes(name))).toEqual([]);
  });

  it('refuses, before any command, a step whose map name is not plain (a step from an older job)', async () => {
    const host = new FakeHost();
    const exec = createStepExecutor({
      policy: DEFAULT_POLICY,
      dryRun: false,
      stateDir: '/var/lib/volume-medic',
      sleep: async () => {},
      now: () => T0,
    });
    const step: ResidualStep = {
      kind: 'flush-map',
      id: 'flush-map:x',
      description: 'multipath -f',
      destructive: true,
      map: '--help',
      wwid: '36001405a1b2c3d4e5f60718293a4b5c6',
      dm: 'dm-3',
      paths: [],
      links: [],
    };
    await expect(exec.isDone(step, host, NO_KUBE_WRITES)).rejects.toBeInstanceOf(RefusedError);
    await expect(exec.apply(step, host, NO_KUBE_WRITES)).rejects.toBeInstanceOf(RefusedError);
    await expect(exec.apply({ ...step, kind: 'release-queued-io', highRisk: true } as ResidualStep, host, NO_KUBE_WRITES)).rejects.toBeInstanceOf(RefusedError);
    expect(host.calls).toEqual([]);
  });

  it('reads an intent record on disk with a map name that is not plain as unreadable', () => {
    const record = {
      version: 1,
      jobId: 'j',
      map: '-f',
      wwid: '36001405a1b2c3d4e5f60718293a4b5c6',
      dm: 'dm-3',
      disks: [],
      createdAt: '2026-12-04T00:00:00Z',
      bootId: null,
      done: [],
    };
    expect(IntentRecord.safeParse(record).success).toBe(false);
    expect(IntentRecord.safeParse({ ...record, map: 'mpatha' }).success).toBe(true);
  });
});
