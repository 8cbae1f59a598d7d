import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AlertmanagerPayload } from '../../../../src/control/sources/index.ts';
import { alertmanagerSignals } from '../../../../src/control/sources/alertmanager.ts';
import { fixture, fixtureSignals } from '../../../support/fixtures.ts';

// Alertmanager webhook v4 bodies (test/fixtures/alertmanager), one alert at a time: only a
// node-recovery alert that has resolved says "this node is back".

type Case = {
  name: string;
  fixture: string;
  signals: { node: string; identity: string[] }[];
  ignored: { reason: string; index: number }[];
};

const CASES: Case[] = [
  {
    name: 'acts on KubeNodeNotReady once it has resolved',
    fixture: 'kube-node-not-ready-resolved',
    signals: [{ node: 'worker-1', identity: ['alert', 'b9a5c6f2d1e08a47', '2025-03-14T06:01:47.342Z'] }],
    ignored: [],
  },
  {
    name: 'ignores KubeNodeNotReady while it is still firing',
    fixture: 'kube-node-not-ready-firing',
    signals: [],
    ignored: [{ reason: 'alert-still-firing', index: 0 }],
  },
  {
    name: 'triages each alert of a grouped payload on its own, for several nodes',
    fixture: 'grouped-several-nodes',
    signals: [
      { node: 'worker-1', identity: ['alert', 'b9a5c6f2d1e08a47', '2025-03-14T06:01:47.342Z'] },
      { node: 'worker-2', identity: ['alert', '3f1e7a0c9b2d5e88', '2025-03-14T06:01:47.342Z'] },
    ],
    ignored: [{ reason: 'alert-still-firing', index: 2 }],
  },
  {
    name: 'ignores resolved alerts that are not node-recovery alerts, even when they name a node or a device',
    fixture: 'unrelated-alerts-resolved',
    signals: [],
    ignored: [
      { reason: 'alert-not-relevant', index: 0 },
      { reason: 'alert-not-relevant', index: 1 },
    ],
  },
  {
    name: 'ignores a node-recovery alert without a node label and leaves odd node labels for triage to refuse',
    fixture: 'hostile-node-labels',
    signals: [
      { node: 'sdb; rm -rf /', identity: ['alert', '0a1b2c3d4e5f6071', '2025-03-14T06:01:47.342Z'] },
      { node: '../../etc', identity: ['alert', '8192a3b4c5d6e7f8', '2025-03-14T06:01:47.342Z'] },
    ],
    ignored: [{ reason: 'alert-names-no-node', index: 2 }],
  },
];

describe('Alertmanager webhook source', () => {
  it.each(CASES)('$name', ({ fixture: name, signals, ignored }) => {
    const r = fixtureSignals('alertmanager', name);
    expect(r.signals.map((s) => ({ kind: s.kind, node: 'node' in s ? s.node : undefined, identity: s.identity }))).toEqual(
      signals.map((s) => ({ kind: 'node-recovered', ...s })),
    );
    expect(r.ignored.map(({ reason, index }) => ({ reason, index }))).toEqual(ignored);
    expect(r.ignored.every((i) => i.source === 'alertmanager' && i.detail.length > 0)).toBe(true);
  });

  it('keeps the identity of an alert the HA peer re-sends', () => {
    const [a] = fixtureSignals('alertmanager', 'kube-node-not-ready-resolved').signals;
    const [b] = fixtureSignals('alertmanager', 'kube-node-not-ready-resolved-ha-peer').signals;
    expect(b?.identity).toEqual(a?.identity);
  });

  it('gives a later outage of the same node a new identity', () => {
    const [a] = fixtureSignals('alertmanager', 'kube-node-not-ready-resolved').signals;
    const [b] = fixtureSignals('alertmanager', 'kube-node-not-ready-resolved-later-outage').signals;
    expect(b?.identity).not.toEqual(a?.identity);
  });

  it('keeps the alert as evidence, with a summary a human can read', () => {
    const [s] = fixtureSignals('alertmanager', 'kube-node-not-ready-resolved').signals;
    expect(s?.evidence).toMatchObject({ source: 'alertmanager', summary: 'KubeNodeNotReady resolved for node worker-1' });
    expect(s?.evidence.raw).toMatchObject({ fingerprint: 'b9a5c6f2d1e08a47', status: 'resolved' });
  });

  it('refuses a body whose alert has no fingerprint, naming the field', () => {
    const body = structuredClone(fixture('alertmanager', 'kube-node-not-ready-resolved')) as { alerts: Record<string, unknown>[] };
    delete body.alerts[0]!['fingerprint'];
    const r = AlertmanagerPayload.safeParse(body);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['alerts', 0, 'fingerprint']);
  });

  // ingest/repeat-answers.ts keys a body's answer by its alerts alone: that is exact only while
  // nothing else of the body changes what its alerts become.
  it('reads nothing of a body but its alerts', () => {
    const fixtures = CASES.map((c) => fixture('alertmanager', c.fixture) as { alerts: unknown[] });
    const opts = { nodeRecoveryAlerts: new Set(['KubeNodeNotReady', 'KubeNodeUnreachable']) };
    const labels = fc.dictionary(fc.constantFrom('node', 'alertname', 'kubernetes_node', 'nodename', 'x'), fc.string());
    fc.assert(
      fc.property(
        fc.constantFrom(...fixtures),
        fc.record(
          {
            version: fc.string(),
            groupKey: fc.string(),
            truncatedAlerts: fc.nat(),
            status: fc.constantFrom('firing', 'resolved'),
            receiver: fc.string(),
            groupLabels: labels,
            commonLabels: labels,
            commonAnnotations: labels,
            externalURL: fc.webUrl(),
          },
          { requiredKeys: [] },
        ),
        (body, envelope) => {
          const alone = AlertmanagerPayload.parse({ alerts: body.alerts });
          const withEnvelope = AlertmanagerPayload.parse({ ...body, ...envelope });
          expect(alertmanagerSignals(withEnvelope, opts)).toEqual(alertmanagerSignals(alone, opts));
        },
      ),
      { numRuns: 300 },
    );
  });
});
