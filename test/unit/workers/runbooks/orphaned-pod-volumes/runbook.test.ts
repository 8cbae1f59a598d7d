import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { OrphanedPodVolumesJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { Mode } from '../../../../../src/core/catalogue/result.ts';
import type { RefusedError } from '../../../../../src/core/errors.ts';
import { ParkedError } from '../../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { createOrphanedPodVolumes } from '../../../../../workers/runbooks/orphaned-pod-volumes/handler.ts';
import { InMemoryOrphanKube, UnknownOrphanKube, type OrphanKube } from '../../../../../workers/runbooks/orphaned-pod-volumes/orphan-kube.ts';
import { sightingsPath } from '../../../../../workers/runbooks/orphaned-pod-volumes/sightings.ts';
import { NODE, UID } from './facts.fixture.ts';
import { orphanNode, POD_DIR } from './orphan-node.ts';

// The runbook end to end on a simulated node: observe -> plan -> steps -> verify.

const STATE = '/var/lib/volume-medic';
const job: OrphanedPodVolumesJob = {
  version: 1,
  runbook: 'orphaned-pod-volumes',
  key: `orphaned-pod-volumes.${NODE}.${UID}.boot`,
  target: { node: NODE, podUid: UID },
  evidence: [{ source: 'k8s-event', summary: 'OrphanedPodVolumes', raw: {} }],
};
const ctx = (mode: Mode): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn: NODE,
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

function seenLongAgo(n: ReturnType<typeof orphanNode>): void {
  n.host.put(
    sightingsPath(STATE),
    JSON.stringify({ version: 1, uids: { [UID]: { since: '2026-12-07T09:00:00.000Z', last: '2026-12-07T09:05:00.000Z', samples: 2 } } }),
  );
}

const run = (n: ReturnType<typeof orphanNode>, mode: Mode, kube: OrphanKube = new InMemoryOrphanKube()) =>
  createOrphanedPodVolumes({ host: n.host, stateDir: STATE, kube, now: () => new Date('2026-12-07T10:00:00.000Z') })(job, ctx(mode));

describe('orphaned-pod-volumes on a simulated node', () => {
  it('removes the whole tree of a mature orphan and verifies it is gone', async () => {
    const n = orphanNode();
    seenLongAgo(n);
    const r = await run(n, 'enforce');
    expect(r.outcome).toBe('succeeded');
    expect([...n.host.nodes.keys()].filter((k) => k.startsWith(POD_DIR))).toEqual([]);
    expect(n.changes().every((c) => /^(unlink|rmdir) -- \/var\/lib\/kubelet\/pods\/\S+$/.test(c))).toBe(true);
    expect(n.changes().at(-1)).toBe(`rmdir -- ${POD_DIR}`);
  });

  it('dry-run runs only the look-only commands and changes nothing', async () => {
    const n = orphanNode();
    seenLongAgo(n);
    const before = [...n.host.nodes.keys()].filter((k) => k.startsWith(POD_DIR)).sort();
    const r = await run(n, 'dry-run');
    expect(r.outcome).toBe('planned');
    expect(n.changes()).toEqual([]);
    expect([...n.host.nodes.keys()].filter((k) => k.startsWith(POD_DIR)).sort()).toEqual(before);
    expect(r.steps.some((s) => s.commands.some((c) => c.argv[0] === 'rmdir'))).toBe(true);
  });

  it('waits (does not refuse) for an orphan seen only once', async () => {
    const n = orphanNode();
    const r = await run(n, 'enforce').catch((e: unknown) => e);
    expect(r).toBeInstanceOf(ParkedError);
    expect((r as ParkedError).message).toMatch(/orphan/);
    expect(n.changes()).toEqual([]);
  });

  it('refuses when the API server cannot be asked (pod-api-unknown)', async () => {
    const n = orphanNode();
    seenLongAgo(n);
    const err = (await run(n, 'enforce', new UnknownOrphanKube()).catch((e: unknown) => e)) as RefusedError;
    expect(err.reasons.join(' ')).toContain('pod-api-unknown: ');
    expect(n.changes()).toEqual([]);
  });

  it('refuses a pod the API server knows, naming it', async () => {
    const n = orphanNode();
    seenLongAgo(n);
    const err = (await run(n, 'enforce', new InMemoryOrphanKube({ [UID]: 'shop/web-0' })).catch((e: unknown) => e)) as RefusedError;
    expect(err.reasons.join(' ')).toContain('pod-known-to-api: pod shop/web-0 has UID');
  });
});

describe('orphaned-pod-volumes as a scan job (no UID named)', () => {
  const scanJob: OrphanedPodVolumesJob = { ...job, key: `orphaned-pod-volumes_${NODE}_scan`, target: { node: NODE } };
  const runScan = (n: ReturnType<typeof orphanNode>, kube: OrphanKube) =>
    createOrphanedPodVolumes({ host: n.host, stateDir: STATE, kube, now: () => new Date('2026-12-07T10:00:00.000Z') })(scanJob, ctx('enforce'));

  it('leaves the directory of a pod the API server knows alone, and has nothing to do', async () => {
    const n = orphanNode();
    seenLongAgo(n);
    const r = await runScan(n, new InMemoryOrphanKube({ [UID]: 'shop/web-0' }));
    expect(r.outcome).toBe('nothing-to-do');
    expect(n.changes()).toEqual([]);
  });

  it('cleans every orphan it finds', async () => {
    const n = orphanNode();
    seenLongAgo(n);
    const r = await runScan(n, new InMemoryOrphanKube());
    expect(r.outcome).toBe('succeeded');
    expect(n.host.nodes.has(POD_DIR)).toBe(false);
  });
});
