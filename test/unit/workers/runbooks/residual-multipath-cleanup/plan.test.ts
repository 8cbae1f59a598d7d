import { describe, expect, it } from 'vitest';
import { plan, type ResidualPlan } from '../../../../../workers/runbooks/residual-multipath-cleanup/plan.ts';
import { DEFAULT_POLICY, type ResidualPolicy } from '../../../../../workers/runbooks/residual-multipath-cleanup/policy.ts';
import { BOOT_ID, DEAD_WWID, deadMap, facts, healthyMap, opener, withOneLivePath } from './facts.fixture.ts';

const policy = (over: Partial<ResidualPolicy> = {}): ResidualPolicy => ({ ...DEFAULT_POLICY, ...over });
const ids = (p: ResidualPlan): string[] => (p.kind === 'steps' ? p.steps.map((s) => s.id) : []);
/** Only the steps that change a device (the intent record's bookkeeping steps left out). */
const acting = (p: ResidualPlan): string[] => (p.kind === 'steps' ? p.steps.filter((s) => s.destructive).map((s) => s.id) : []);
const reasons = (p: ResidualPlan): string => (p.kind === 'refuse' ? p.reasons.join(' | ') : `not refused: ${p.kind} ${'summary' in p ? p.summary : ''}`);
const verdictOf = (p: ResidualPlan, map: string) => p.assessments.find((a) => a.map === map)?.verdict;

describe('a residual map that passes every interlock', () => {
  it('records its intent, releases the queue, flushes the map, deletes each disk and forgets the intent, in that order', () => {
    const p = plan(facts(), policy());
    expect(ids(p)).toEqual([
      `record-intent:${DEAD_WWID}`,
      `release-queued-io:${DEAD_WWID}`,
      `flush-map:${DEAD_WWID}`,
      `delete-disk:sdd:3:0:0:1:${DEAD_WWID}`,
      `delete-disk:sdc:2:0:0:1:${DEAD_WWID}`,
      `close-intent:${DEAD_WWID}`,
    ]);
    expect(p.kind === 'steps' && p.steps.map((s) => s.destructive)).toEqual([false, true, true, true, true, false]);
    expect(p.kind === 'steps' && p.steps[0]).toMatchObject({
      kind: 'record-intent',
      record: {
        map: 'mpathb',
        wwid: DEAD_WWID,
        dm: 'dm-0',
        bootId: BOOT_ID,
        disks: [
          { name: 'sdd', hctl: '3:0:0:1', wwid: DEAD_WWID },
          { name: 'sdc', hctl: '2:0:0:1', wwid: DEAD_WWID },
        ],
      },
    });
    expect(p.kind === 'steps' && p.steps[1]).toMatchObject({ kind: 'release-queued-io', map: 'mpathb', highRisk: true });
    expect(p.kind === 'steps' && p.steps[2]).toMatchObject({
      kind: 'flush-map',
      map: 'mpathb',
      dm: 'dm-0',
      paths: ['sdd', 'sdc'],
      links: deadMap().byIdLinks,
    });
  });

  it('lists the healthy map it leaves alone, with its reason, in the summary', () => {
    const p = plan(facts(), policy());
    expect(verdictOf(p, 'mpathc')).toMatchObject({ kind: 'healthy' });
    expect(p.kind === 'steps' && p.summary).toMatch(/mpathc \(dm-1\) left alone: healthy, 2 of 2 path\(s\) not dead/);
  });

  it('does not release queued I/O on a map without queue_if_no_path and with no opener', () => {
    const p = plan(
      facts([
        deadMap({
          queueIfNoPath: false,
          features: '0',
          openCount: 0,
          openers: [],
          probe: { outcome: 'io-error', durationMs: 20, exitCode: 1, stuckPids: [], detail: 'Input/output error' },
        }),
      ]),
      policy(),
    );
    expect(acting(p)).toEqual([`flush-map:${DEAD_WWID}`, `delete-disk:sdd:3:0:0:1:${DEAD_WWID}`, `delete-disk:sdc:2:0:0:1:${DEAD_WWID}`]);
  });

  it('cleans a dead map whose disks are already gone (only the map is left)', () => {
    const gone = {
      hctl: null,
      dev: null,
      devT: null,
      dmState: 'failed',
      checkerState: 'faulty',
      onlineState: 'running',
      sysfsState: null,
      sysfsWwid: null,
    };
    const p = plan(facts([deadMap({ paths: [gone, gone], slaves: [] })]), policy());
    expect(acting(p)).toEqual([`release-queued-io:${DEAD_WWID}`, `flush-map:${DEAD_WWID}`]);
  });

  it('notes probe processes stuck in D state', () => {
    expect(plan(facts(), policy()).notes.join(' ')).toMatch(/990 \(probe of dm-0\)/);
  });
});

describe('maps that are never touched', () => {
  it('never touches a map with one live path, even with every other interlock clear', () => {
    const p = plan(facts([withOneLivePath(deadMap())]), policy());
    expect(p.kind).toBe('nothing-to-do');
    expect(verdictOf(p, 'mpathb')).toMatchObject({
      kind: 'healthy',
      why: expect.stringMatching(/1 of 2 path\(s\) not dead: sdd active ready running/),
    });
  });

  it.each([
    ['i/o pending', { dmState: 'failed', checkerState: 'i/o pending' }],
    ['active faulty (the kernel has not failed it yet)', { dmState: 'active', checkerState: 'faulty' }],
    ['ghost (a standby path)', { dmState: 'failed', checkerState: 'ghost' }],
    ['undef', { dmState: 'undef', checkerState: 'undef' }],
  ])('counts a path in state %s as not dead', (_, state) => {
    const m = deadMap();
    const p = plan(facts([{ ...m, paths: [{ ...m.paths[0]!, ...state }, m.paths[1]!] }]), policy());
    expect(verdictOf(p, 'mpathb')?.kind).toBe('healthy');
  });

  it('does nothing (and is not a refusal) when every map is healthy', () => {
    const p = plan(facts([healthyMap()]), policy());
    expect(p).toMatchObject({ kind: 'nothing-to-do', summary: expect.stringMatching(/no residual multipath maps: mpathc/) });
  });

  it('does nothing on a node without multipath maps', () => {
    expect(plan(facts([]), policy())).toMatchObject({ kind: 'nothing-to-do', summary: 'no multipath maps' });
  });
});

describe('interlocks on a map whose paths are all dead', () => {
  const refusedFor = (over: Parameters<typeof deadMap>[0], pattern: RegExp, pol = policy()): void => {
    const p = plan(facts([deadMap(over), healthyMap()]), pol);
    expect(p.kind).toBe('refuse');
    expect(reasons(p)).toMatch(pattern);
    expect(verdictOf(p, 'mpathb')).toMatchObject({ kind: 'held' });
  };

  it('refuses a map still claimed by a VolumeAttachment of this node', () => {
    const p = plan(facts(undefined, { attachments: { known: true, wwids: ['600140503b080d39e3f42d4a24115262'] } }), policy());
    expect(reasons(p)).toMatch(
      /not true that no VolumeAttachment of node worker-1 claims WWID 3600140503b080d39e3f42d4a24115262 \(VolumeAttachments \(Kubernetes API\): it is attached to this node\)/,
    );
  });

  it('refuses a map with a holder (a partition map or LVM on top)', () =>
    refusedFor({ holders: ['dm-5'] }, /not true that no partition, LVM, md or dm device sits on dm-0 \(\/sys\/block\/dm-0\/holders: held by dm-5\)/));

  it('refuses a dead map that is still mounted, in any mount namespace', () =>
    refusedFor(
      { mounts: [{ mountPoint: '/var/lib/kubelet/pods/x/volumes/pvc', how: 'ext4 /dev/mapper/mpathb (mnt:[4026532201])', pids: [4242] }] },
      /mounted at \/var\/lib\/kubelet\/pods\/x\/volumes\/pvc .*4026532201.*pids 4242/,
    ));

  it('refuses a map used as swap', () => refusedFor({ swap: true }, /swap/));

  it('refuses a map open by a process that is not stuck on I/O (a real user)', () =>
    refusedFor(
      { openers: [opener(31, 'postgres', { state: 'S', cgroup: null }), opener(857, '(udev-worker)')] },
      /live user\(s\): pid 31 \(postgres, state S\)/,
    ));

  it('refuses when the open count is higher than the victims explain (a kernel user such as a loop device)', () =>
    refusedFor({ openCount: 3 }, /open count 3 but victims hold only 2/));

  it('refuses when the open count is unknown', () =>
    refusedFor({ openCount: null }, /no evidence that every open of dm-0 belongs to a known victim \(dmsetup info -c: dmsetup info did not list the map/));

  it('refuses a map that still reads', () =>
    refusedFor({ probe: { outcome: 'readable', durationMs: 3, exitCode: 0, stuckPids: [], detail: 'read 1 MiB' } }, /read probe succeeded/));

  it('refuses a map that was not probed', () =>
    refusedFor(
      { probe: { outcome: 'not-run', durationMs: 0, exitCode: null, stuckPids: [], detail: 'the probe was not run (dry-run host)' } },
      /no evidence that a direct read of dm-0 fails or hangs/,
    ));

  const skippedInDryRun = {
    outcome: 'skipped-dry-run' as const,
    durationMs: 0,
    exitCode: null,
    stuckPids: [],
    detail: 'dry-run: the map queues I/O',
  };

  it('in dry-run, plans the cleanup of a queueing map it did not probe (a probe would hang), showing what enforce would do', () => {
    const p = plan(facts([deadMap({ probe: skippedInDryRun }), healthyMap()], { mode: 'dry-run' }), policy());
    expect(p.kind).toBe('steps');
  });

  it('in enforce, never takes a skipped probe as a failed one', () => {
    const p = plan(facts([deadMap({ probe: skippedInDryRun }), healthyMap()], { mode: 'enforce' }), policy());
    expect(p.kind).toBe('refuse');
    expect(reasons(p)).toMatch(/no evidence that a direct read of dm-0 fails or hangs/);
  });

  it('refuses a map whose multipath view disagrees with sysfs slaves', () =>
    refusedFor({ slaves: ['sdc', 'sdd', 'sde'] }, /contradictory evidence about whether its paths .*sysfs slaves are \[sdc, sdd, sde\]/));

  it('refuses a map whose dm uuid is not the multipath uuid of its WWID', () =>
    refusedFor({ dmUuid: 'LVM-abc' }, /dm-0 is the multipath map of WWID .*uuid LVM-abc/));

  it('refuses a map with a path whose disk now reports another WWID', () => {
    const m = deadMap();
    refusedFor({ paths: [{ ...m.paths[0]!, sysfsWwid: '3600140599999999999999999999999999' }, m.paths[1]!] }, /sdd reports 3600140599/);
  });

  it('does not take another designator of the same LUN for another WWID (scsi_debug: sysfs NAA, multipath T10)', () => {
    const m = deadMap({ wwid: '1Linux_scsi_debug_2000', dmUuid: 'mpath-1Linux_scsi_debug_2000' });
    const p = plan(facts([{ ...m, paths: m.paths.map((x) => ({ ...x, sysfsWwid: '333333330000007d0' })) }]), policy());
    expect(p.kind).toBe('steps');
  });

  it('refuses a map with lines it could not parse', () =>
    refusedFor({ problems: ['  `- something new'] }, /contradictory evidence about whether the state of mpathb reads unambiguously.*something new/));

  it('lists every reason, not only the first', () => {
    const p = plan(facts([deadMap({ holders: ['dm-5'], swap: true })]), policy());
    expect(reasons(p)).toMatch(/held by dm-5.*swap/);
  });

  it('puts the queue release behind approval when policy says so', () =>
    refusedFor({}, /fail_if_no_path\) is needed and requires approval by policy/, policy({ releaseQueuedIo: 'require-approval' })));

  it('still cleans without approval a dead map that needs no queue release', () => {
    const p = plan(facts([deadMap({ queueIfNoPath: false, openCount: 0, openers: [] })]), policy({ releaseQueuedIo: 'require-approval' }));
    expect(acting(p)[0]).toBe(`flush-map:${DEAD_WWID}`);
  });

  it('cleans the residual map and reports the held one when both exist', () => {
    const held = deadMap({
      name: 'mpathd',
      wwid: '36001405dddddddddddddddddddddddd1',
      dmUuid: 'mpath-36001405dddddddddddddddddddddddd1',
      dm: 'dm-2',
      holders: ['dm-7'],
    });
    const p = plan(facts([deadMap(), held, healthyMap()]), policy());
    expect(p.kind).toBe('steps');
    expect(ids(p).some((i) => i.includes('dddd'))).toBe(false);
    expect(p.kind === 'steps' && p.summary).toMatch(
      /mpathd \(dm-2\) left alone although every path is dead: not true that no partition, LVM, md or dm device sits on dm-2 \(\/sys\/block\/dm-2\/holders: held by dm-7\)/,
    );
  });
});

describe('job-level refusals', () => {
  it('refuses and asks for a human when more maps look residual than the cap', () => {
    const maps = [0, 1, 2].map((i) =>
      deadMap({
        name: `mpath${i}`,
        wwid: `3600140500000000000000000000000${i}`,
        dmUuid: `mpath-3600140500000000000000000000000${i}`,
        dm: `dm-${i}`,
      }),
    );
    const p = plan(facts(maps), policy({ maxMapsPerJob: 2 }));
    expect(reasons(p)).toMatch(/3 maps look residual \(mpath0, mpath1, mpath2\), more than the 2 one job may remove: a human must confirm/);
  });

  it('refuses a job meant for another node', () => {
    expect(reasons(plan(facts(undefined, { ranOn: 'worker-2' }), policy()))).toMatch(/for node worker-1 but ran on worker-2/);
  });

  it('refuses when multipath -ll could not be read but sysfs shows maps', () => {
    const p = plan(facts([], { listing: { ok: false, why: 'multipath -ll failed (exit code 1); sysfs shows multipath maps dm-0' } }), policy());
    expect(reasons(p)).toMatch(/cannot list multipath maps/);
  });

  it('does nothing when multipath is not installed and sysfs shows no map', () => {
    const p = plan(facts([], { listing: { ok: false, why: 'multipath -ll failed (exit code 127); sysfs shows no multipath map' } }), policy());
    expect(p.kind).toBe('nothing-to-do');
  });

  it('refuses by default when the VolumeAttachments cannot be known, naming what is missing', () => {
    const p = plan(facts(undefined, { attachments: { known: false, why: 'the API server did not answer' } }), policy());
    expect(p.kind).toBe('refuse');
    expect(reasons(p)).toMatch(
      /no evidence that no VolumeAttachment of node worker-1 claims WWID 3600140503b080d39e3f42d4a24115262 \(VolumeAttachments \(Kubernetes API\): the API server did not answer\)/,
    );
    expect(DEFAULT_POLICY.attachmentsUnknown).toBe('refuse');
  });

  it('proceeds without the VolumeAttachment check only when the operator says so, and every step says it', () => {
    const p = plan(facts(undefined, { attachments: { known: false, why: 'no cluster lookups' } }), policy({ attachmentsUnknown: 'proceed' }));
    expect(p.kind).toBe('steps');
    const flush = p.kind === 'steps' ? p.steps.find((s) => s.kind === 'flush-map') : undefined;
    expect(flush?.evidence).toContainEqual(
      expect.objectContaining({
        claim: expect.stringMatching(/RESIDUAL_ATTACHMENTS_UNKNOWN=proceed/),
        status: 'holds',
        detail: 'unknown: no cluster lookups',
      }),
    );
  });
});
