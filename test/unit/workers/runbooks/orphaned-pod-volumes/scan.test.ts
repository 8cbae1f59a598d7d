import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RemediationJob } from '../../../../../src/core/catalogue/jobs.ts';
import { InMemoryLookups } from '../../../../../src/adapters/kube/lookups.ts';
import { triage } from '../../../../../src/control/triage/triage.ts';
import { startSelfChecks } from '../../../../../workers/node-agent/self-checks.ts';
import { InMemoryOrphanKube, type OrphanKube, UnknownOrphanKube } from '../../../../../workers/runbooks/orphaned-pod-volumes/orphan-kube.ts';
import { orphanScan } from '../../../../../workers/runbooks/orphaned-pod-volumes/scan.ts';
import { NODE, PODS, UID, UID2 } from './facts.fixture.ts';
import { orphanNode } from './orphan-node.ts';

// The agent's periodic scan of pods/: an orphan seen in two scans ORPHAN_MIN_AGE_SECONDS apart
// becomes a job; a pod the API server or the runtime knows never does.

const STATE = '/var/lib/volume-medic';
const at = (iso: string) => () => new Date(iso);
const scan = (n: ReturnType<typeof orphanNode>, now: string, kube: OrphanKube = new InMemoryOrphanKube()) =>
  orphanScan({ node: NODE, host: n.host, stateDir: STATE, kube, kubeletRoot: '/var/lib/kubelet', minAgeMs: 600_000, now: at(now) });

describe('the orphan scan of the node agent', () => {
  it('asks for a job only once the orphan was seen in two scans ten minutes apart', async () => {
    const n = orphanNode();
    expect(await scan(n, '2026-12-07T10:00:00Z')).toEqual({ jobs: [], orphans: [UID] });
    expect(await scan(n, '2026-12-07T10:05:00Z')).toEqual({ jobs: [], orphans: [UID] });
    const r = await scan(n, '2026-12-07T10:10:00Z');
    expect('jobs' in r && r.jobs).toHaveLength(1);
    const job = 'jobs' in r ? r.jobs[0] : undefined;
    expect(RemediationJob.safeParse(job).success).toBe(true);
    expect(job).toMatchObject({ runbook: 'orphaned-pod-volumes', target: { node: NODE, podUid: UID }, evidence: [{ source: 'agent' }] });
  });

  it('uses the key triage gives kubelet’s line about the same UID, so NPD’s job and the scan’s fold', async () => {
    const n = orphanNode();
    await scan(n, '2026-12-07T10:00:00Z');
    const r = await scan(n, '2026-12-07T10:10:00Z');
    const fromLine = await triage(
      [
        {
          kind: 'orphaned-pod-volumes',
          version: 1,
          node: NODE,
          podUid: UID,
          identity: ['orphan', NODE, UID],
          evidence: { source: 'npd', summary: 'x', raw: {} },
        },
      ],
      { lookups: new InMemoryLookups() },
    );
    expect('jobs' in r && r.jobs[0]?.key).toBe(fromLine.jobs[0]?.key);
  });

  it('never asks for a pod the API server or the runtime knows, and forgets an orphan that is gone', async () => {
    const n = orphanNode();
    n.host.put(`${PODS}/${UID2}`, { type: 'dir' });
    n.sandboxes.add(UID2);
    await scan(n, '2026-12-07T10:00:00Z', new InMemoryOrphanKube({ [UID]: 'shop/web-0' }));
    const r = await scan(n, '2026-12-07T10:10:00Z', new InMemoryOrphanKube({ [UID]: 'shop/web-0' }));
    expect(r).toEqual({ jobs: [], orphans: [] });
  });

  it('skips the scan, saying why, when the API server or the runtime cannot be asked', async () => {
    expect(await scan(orphanNode(), '2026-12-07T10:00:00Z', new UnknownOrphanKube())).toMatchObject({ skipped: expect.stringContaining('API server') });
    const n = orphanNode();
    n.host.on(['crictl'], { exitCode: 127, stderr: 'nsenter: failed to execute crictl: No such file or directory' });
    expect(await scan(n, '2026-12-07T10:00:00Z')).toMatchObject({ skipped: expect.stringContaining('crictl is not installed') });
  });

  it('runs from the agent’s self-checks at start and on its own interval, storing the job', async () => {
    const n = orphanNode();
    const stored: unknown[] = [];
    const ticks: Array<() => void> = [];
    let now = Date.parse('2026-12-07T10:00:00Z');
    const checks = startSelfChecks({
      node: NODE,
      host: n.host,
      stateDir: STATE,
      enqueue: async (jobs) => void stored.push(...jobs),
      intervalMs: 0,
      log: pino({ level: 'silent' }),
      every: (_ms, tick) => {
        ticks.push(tick);
        return () => undefined;
      },
      orphans: { kube: new InMemoryOrphanKube(), kubeletRoot: '/var/lib/kubelet', minAgeMs: 600_000, now: () => new Date(now), intervalMs: 300_000 },
    });
    await checks.first;
    expect(stored).toEqual([]);
    now += 660_000;
    ticks[0]?.();
    await checks.stop();
    expect(stored).toMatchObject([{ runbook: 'orphaned-pod-volumes', target: { podUid: UID } }]);
  });
});
