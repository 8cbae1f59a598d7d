import { describe, expect, it } from 'vitest';
import { queueFor } from '../../../../src/core/catalogue/queues.ts';
import { triage } from '../../../../src/control/triage/index.ts';
import { NodeReadonlyTracker } from '../../../../src/control/watches/node-readonly.ts';
import { fixture, fixtureLookups, signalsFrom, type FixtureSource } from '../../../support/fixtures.ts';

// What real node-problem-detector v0.8.20 wrote to the API server (test/fixtures/npd/captured/,
// made by scripts/capture/npd-kernel-monitor.ts; the README says how), read every way volume-medic
// reads it: each Event through the webhook routes (`/v1/events`, `/v1/npd`) and triage, the Node
// through the receiver's Node watch and as a `{node, conditions}` body.
// - image/: NPD's image entrypoint (config/kernel-monitor.json, XfsShutdown rule of v0.8.21, and
//   config/readonly-monitor.json) plus deploy/integrations/npd/kubelet-orphaned-pod-monitor.json;
// - daemonset/: NPD's DaemonSet ConfigMap, where kernel-monitor and readonly-monitor both own
//   ReadonlyFilesystem, so one kernel line makes two Events.

type Job = { runbook: string; target: Record<string, unknown>; queue: string };

const readonly = (node: string): Job => ({ runbook: 'readonly-filesystem-recovery', target: { node }, queue: `vm-node-{${node}}` });
const orphaned = (node: string, podUid: string): Job => ({ runbook: 'orphaned-pod-volumes', target: { node, podUid }, queue: `vm-node-{${node}}` });

async function jobsOf(source: FixtureSource, body: unknown): Promise<{ jobs: Job[]; ignored: string[] }> {
  const found = signalsFrom(source, body);
  const r = await triage(found.signals, { lookups: fixtureLookups() });
  return {
    jobs: r.jobs.map((j) => ({ runbook: j.runbook, target: j.target, queue: queueFor(j) })),
    ignored: [...found.ignored, ...r.ignored].map((i) => i.reason),
  };
}

const EVENTS: Array<{ name: string; fixture: string; reporter: string; jobs: Job[] }> = [
  { name: "readonly-monitor's FilesystemIsReadOnly", fixture: 'image/FilesystemIsReadOnly-1', reporter: 'readonly-monitor', jobs: [readonly('worker-3')] },
  { name: "kernel-monitor's XfsHasShutdown", fixture: 'image/XfsHasShutdown-1', reporter: 'kernel-monitor', jobs: [readonly('worker-3')] },
  {
    name: "kubelet-monitor's OrphanedPodVolumes (glog, volume paths)",
    fixture: 'image/OrphanedPodVolumes-1',
    reporter: 'kubelet-monitor',
    jobs: [orphaned('worker-3', '626ab649-26c0-11e9-a791-001517ac3898')],
  },
  {
    name: "kubelet-monitor's OrphanedPodVolumes (glog, volume subpaths)",
    fixture: 'image/OrphanedPodVolumes-2',
    reporter: 'kubelet-monitor',
    jobs: [orphaned('worker-3', 'cbefa9e9-9572-4bc8-809b-18083b88b232')],
  },
  {
    name: "kubelet-monitor's OrphanedPodVolumes (klog structured)",
    fixture: 'image/OrphanedPodVolumes-3',
    reporter: 'kubelet-monitor',
    jobs: [orphaned('worker-3', '84344a7e-8003-462a-9321-a3f6c45e530f')],
  },
  {
    name: "the DaemonSet's readonly-monitor FilesystemIsReadOnly",
    fixture: 'daemonset/FilesystemIsReadOnly-1',
    reporter: 'readonly-monitor',
    jobs: [readonly('worker-5')],
  },
  {
    name: "the DaemonSet's kernel-monitor FilesystemIsReadOnly",
    fixture: 'daemonset/FilesystemIsReadOnly-2',
    reporter: 'kernel-monitor',
    jobs: [readonly('worker-5')],
  },
];

const captured = (name: string): Record<string, any> => fixture('npd', `captured/${name}`) as Record<string, any>;

describe("node-problem-detector's captured writes", () => {
  describe.each(['events', 'npd'] as const)('an Event through /v1/%s', (source) => {
    it.each(EVENTS)('$name makes its job', async ({ fixture: name, reporter, jobs }) => {
      const event = captured(`${name}.event`);
      // The envelope every NPD Event has (problem_client.go, client-go's recorder): what event-trust.ts checks.
      expect(event).toMatchObject({
        metadata: { namespace: 'default' },
        involvedObject: { kind: 'Node', name: event['source'].host, uid: event['source'].host },
        source: { component: reporter },
        reportingComponent: reporter,
        reportingInstance: event['source'].host,
        type: 'Warning',
      });
      expect(await jobsOf(source, event)).toEqual({ jobs, ignored: [] });
    });
  });

  it("says a permanent rule's kernel line only inside NPD's condition-change sentence, so the Event names no device", () => {
    expect(captured('image/FilesystemIsReadOnly-1.event')['message']).toBe(
      'Node condition ReadonlyFilesystem is now: True, reason: FilesystemIsReadOnly, message: "EXT4-fs (dm-93): Remounting filesystem read-only"',
    );
  });

  it.each([
    ['image', 'worker-3', ['ReadonlyFilesystem', 'XfsShutdown']],
    ['daemonset', 'worker-5', ['ReadonlyFilesystem']],
  ] as const)("signals each stopped file system of the %s Node's conditions, as the Node watch sees them", (name, node, types) => {
    const signals = new NodeReadonlyTracker().observe(captured(`${name}/node`) as never);
    expect(signals.map((s) => [s.node, s.identity[2]])).toEqual(types.map((t) => [node, t]));
  });

  it("makes a recovery job of each stopped file system of the image Node's conditions posted as {node, conditions}", async () => {
    const node = captured('image/node');
    const r = await jobsOf('npd', { node: node['metadata'].name, conditions: node['status'].conditions });
    // ReadonlyFilesystem and XfsShutdown (each its own transition); KernelDeadlock and CperHardwareErrorFatal are healthy.
    expect(r).toEqual({ jobs: [readonly('worker-3'), readonly('worker-3')], ignored: ['condition-not-relevant', 'condition-not-relevant'] });
  });
});
