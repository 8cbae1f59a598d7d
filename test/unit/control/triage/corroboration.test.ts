import { describe, expect, it } from 'vitest';
import { InMemoryLookups, type NodeInfo } from '../../../../src/adapters/kube/lookups.ts';
import type { NodeRecoveredSignal } from '../../../../src/core/signals/index.ts';
import { RECOVERY_CORROBORATION_MS, triage } from '../../../../src/control/triage/triage.ts';
import { fixtureSignals } from '../../../support/fixtures.ts';
import { eventSignals } from '../../../../src/control/watches/event-signals.ts';
import { DEFAULT_EVENT_TRUST } from '../../../../src/control/sources/event-trust.ts';
import { coreEvent } from '../../../support/kube-objects.ts';

// Issue 30, attack 7: the webhook token holder posting recoveries ("kubelet" NodeReady Events,
// resolved alerts) for nodes that did not recover. With the API server's answers (KUBE_WATCH),
// a posted recovery becomes a job only when the Node's own status agrees.

const NOW = Date.parse('2026-12-04T12:00:00Z');
const BOOT = 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26';
const node = (over: Partial<NodeInfo> = {}): NodeInfo => ({
  name: 'worker-1',
  addresses: [],
  labels: {},
  ready: 'True',
  readySince: new Date(NOW - 5 * 60_000).toISOString(),
  bootId: BOOT,
  ...over,
});
const lookups = (n?: NodeInfo) => (n ? new InMemoryLookups().addNode(n) : new InMemoryLookups());
const posted = (): NodeRecoveredSignal[] => [
  ...(fixtureSignals('alertmanager', 'kube-node-not-ready-resolved').signals as NodeRecoveredSignal[]),
  ...(fixtureSignals('events', 'node-ready.exporter').signals as NodeRecoveredSignal[]),
  ...(fixtureSignals('events', 'node-rebooted.exporter').signals as NodeRecoveredSignal[]),
];
const run = (signals: NodeRecoveredSignal[], n: NodeInfo | undefined, corroborate = true) =>
  triage(signals, { lookups: lookups(n), corroborate, now: () => NOW });

describe('posted node recoveries are checked against the Node', () => {
  it('makes the job when the Node agrees: Ready since minutes ago, the boot the Rebooted event names', async () => {
    const r = await run(posted(), node());
    expect(r.ignored).toEqual([]);
    // One outage: the resolved alert, NodeReady and Rebooted fold into one job of that boot.
    expect(r.jobs.map((j) => j.target)).toEqual([{ node: 'worker-1' }]);
  });

  it('ignores them for a node the cluster does not have, naming why (a reason that is a metric label)', async () => {
    const r = await run(posted(), undefined);
    expect(r.jobs).toEqual([]);
    expect(r.ignored.map((i) => i.reason)).toEqual(['node-status-disagrees', 'node-status-disagrees', 'node-status-disagrees']);
    expect(r.ignored[0]!.detail).toMatch(/no Node worker-1/);
  });

  it('ignores a resolved alert or NodeReady for a node that is not Ready, or has been Ready for longer than the window', async () => {
    const notReady = await run(posted().slice(0, 2), node({ ready: 'Unknown' }));
    expect(notReady.jobs).toEqual([]);
    expect(notReady.ignored[0]!.detail).toMatch(/not Ready \(Ready Unknown\)/);
    const longReady = await run(posted().slice(0, 2), node({ readySince: new Date(NOW - RECOVERY_CORROBORATION_MS - 60_000).toISOString() }));
    expect(longReady.jobs).toEqual([]);
    expect(longReady.ignored[0]!.detail).toMatch(/has been Ready since/);
    // Just inside the window: believed.
    expect((await run(posted().slice(0, 2), node({ readySince: new Date(NOW - RECOVERY_CORROBORATION_MS + 60_000).toISOString() }))).jobs).toHaveLength(1);
  });

  it("ignores a Rebooted event whose boot is not the Node's, and takes it before Ready is True (kubelet sends it first)", async () => {
    const rebooted = posted().slice(2);
    expect((await run(rebooted, node({ bootId: 'another-boot-0000' }))).ignored[0]!.detail).toMatch(/runs boot another-boot-0000/);
    expect((await run(rebooted, node({ ready: 'False' }))).jobs).toHaveLength(1);
  });

  it('believes the Node watch itself, and everything when there is no cluster access to ask (KUBE_WATCH off)', async () => {
    const fromWatch: NodeRecoveredSignal = {
      kind: 'node-recovered',
      version: 1,
      node: 'worker-1',
      bootId: BOOT,
      identity: ['boot', 'worker-1', BOOT],
      evidence: { source: 'k8s-watch', summary: 'Node worker-1 Ready Unknown -> True', raw: {} },
    };
    expect((await run([fromWatch], undefined)).jobs).toHaveLength(1);
    const unasked = await run(posted(), undefined, false);
    expect(unasked.ignored).toEqual([]);
    // Without the Node's boot id they keep their own identities: one job each (docs/jobs.md, "Idempotency").
    expect(unasked.jobs).toHaveLength(3);
  });
});

// Issue 44, item 4: the same Events read by the receiver's own Event watch (anyone with kubelet
// credentials may create them in `default`) are a sender's word too, not the Node watch's.
describe("Node Events read by the receiver's own watch are checked against the Node as posted ones are", () => {
  const watched = (reason: 'NodeReady' | 'Rebooted', message: string): NodeRecoveredSignal[] => {
    const r = eventSignals(
      coreEvent({
        name: `worker-1.${reason}`,
        uid: `uid-${reason}`,
        reason,
        type: 'Normal',
        message,
        involved: { kind: 'Node', name: 'worker-1' },
        host: 'worker-1',
      }),
      DEFAULT_EVENT_TRUST,
    );
    if (r.outcome !== 'signal') throw new Error(`not a signal: ${JSON.stringify(r)}`);
    return r.signals as NodeRecoveredSignal[];
  };
  const nodeReady = () => watched('NodeReady', 'Node worker-1 status is now: NodeReady');
  const rebooted = (boot: string) => watched('Rebooted', `Node worker-1 has been rebooted, boot id: ${boot}`);

  it('has its own source, and no boot identity before triage (it would name the boot the Node runs whatever it says)', () => {
    const [s] = nodeReady();
    expect(s!.evidence.source).toBe('k8s-watch-event');
    expect(s!.bootId).toBeUndefined();
  });

  it('ignores a NodeReady for a node Ready for days, not Ready, or unknown, and a Rebooted naming another boot', async () => {
    const longReady = await run(nodeReady(), node({ readySince: new Date(NOW - 3 * 86_400_000).toISOString() }));
    expect(longReady.jobs).toEqual([]);
    expect(longReady.ignored).toMatchObject([
      { reason: 'node-status-disagrees', source: 'k8s-watch-event', detail: expect.stringMatching(/has been Ready since/) },
    ]);
    expect((await run(nodeReady(), node({ ready: 'Unknown' }))).ignored[0]!.detail).toMatch(/not Ready/);
    expect((await run(nodeReady(), undefined)).ignored[0]!.detail).toMatch(/no Node worker-1/);
    const elsewhere = await run(rebooted('another-boot-0000'), node());
    expect(elsewhere.jobs).toEqual([]);
    expect(elsewhere.ignored[0]!.detail).toMatch(/runs boot d87bdb0a.*not the another-boot-0000/);
  });

  it('makes the job of a real recovery: Ready since minutes ago, the Rebooted and NodeReady of its boot folding into one', async () => {
    const r = await run([...rebooted(BOOT), ...nodeReady()], node());
    expect(r.ignored).toEqual([]);
    expect(r.jobs).toHaveLength(1);
    expect(r.jobs[0]).toMatchObject({ target: { node: 'worker-1' }, bootId: BOOT });
  });

  it("names its evidence k8s-watch in the job, a source the agents of the release before know (a rolling upgrade's old agents read these jobs)", async () => {
    const before = new Set(['alertmanager', 'k8s-event', 'npd', 'k8s-watch', 'api', 'agent']);
    const r = await run([...rebooted(BOOT), ...nodeReady()], node());
    const sources = r.jobs.flatMap((j) => j.evidence.map((e) => e.source));
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.filter((s) => !before.has(s))).toEqual([]);
  });
});
