import type { CoreV1Api } from '@kubernetes/client-node';
import { CONTAINER_REASONS, VOLUME_REASONS } from '../sources/classify-event.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { Signal } from '../../core/signals/index.ts';
import { eventLastSeen, eventSignals } from './event-signals.ts';
import type { EventTrust } from '../sources/event-trust.ts';
import { nodeRecoveredSignal, observeNode, recentlyRecovered } from './node-ready.ts';
import type { SignalSink } from './signal-sink.ts';
import { toPlain } from '../../adapters/kube/supervised-informer.ts';

// What a watch cannot give: incidents that happened while volume-medic was down (or its watch was
// restarting). On start and every few minutes: nodes that became Ready recently, and pods stuck
// creating their containers with the latest storage events about them. Everything goes through
// the same sink, and identities are the incident's own, so a repeat folds into the existing job.

const STUCK_WAITING_REASONS = new Set(['ContainerCreating', 'CreateContainerError']);

export interface ReconcileOptions {
  core: CoreV1Api;
  sink: SignalSink;
  now: () => number;
  /** A node Ready for less than this is treated as possibly just recovered. */
  recentReadyMs: number;
  /** Most pods looked at per run, so a cluster-wide outage does not become a request storm. */
  maxPods?: number;
  /** Which Events are believed. */
  eventTrust: EventTrust;
  log?: Logger;
}

export interface ReconcileResult {
  nodes: number;
  pods: number;
  signals: number;
}

const RELEVANT = new Set([...VOLUME_REASONS, ...CONTAINER_REASONS]);

export async function reconcileOnce(o: ReconcileOptions): Promise<ReconcileResult> {
  const signals: Array<{ s: Signal[]; origin: string }> = [];
  const nodes = (await o.core.listNode({})).items.map((n) => observeNode(toPlain(n)));
  let recovered = 0;
  for (const n of nodes) {
    if (!n) continue;
    if (recentlyRecovered(n, o.now(), o.recentReadyMs)) {
      recovered++;
      signals.push({
        s: [nodeRecoveredSignal(n, 'k8s-watch', `Node ${n.name} became Ready at ${new Date(n.readySince!).toISOString()} (reconcile)`)],
        origin: 'reconcile-nodes',
      });
    }
  }
  const pending = (await o.core.listPodForAllNamespaces({ fieldSelector: 'status.phase=Pending' })).items;
  const stuck = pending.filter((p) =>
    [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])].some((s) => STUCK_WAITING_REASONS.has(s.state?.waiting?.reason ?? '')),
  );
  for (const pod of stuck.slice(0, o.maxPods ?? 200)) {
    const ns = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    const events = (await o.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${name}` })).items
      .map((e) => toPlain(e) as unknown)
      .filter((e) => RELEVANT.has(String((e as { reason?: string }).reason)));
    // The latest event of each reason: the pod's current trouble, not its history.
    const latest = new Map<string, unknown>();
    for (const e of events.sort((a, b) => eventLastSeen(b) - eventLastSeen(a))) {
      const reason = String((e as { reason?: string }).reason);
      if (!latest.has(reason)) latest.set(reason, e);
    }
    for (const e of latest.values()) {
      const r = eventSignals(e, o.eventTrust);
      if (r.outcome === 'signal') signals.push({ s: r.signals, origin: 'reconcile-pods' });
    }
  }
  for (const { s, origin } of signals) await o.sink.submit(s, origin);
  const result = { nodes: recovered, pods: stuck.length, signals: signals.reduce((n, x) => n + x.s.length, 0) };
  o.log?.debug(result, 'reconcile done');
  return result;
}
