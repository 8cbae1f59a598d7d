import { classifyEvent } from '../sources/classify-event.ts';
import { KubeEventPayload } from '../sources/kube-event.ts';
import type { EventTrust } from '../sources/event-trust.ts';
import type { IgnoreReason, Signal } from '../../core/signals/index.ts';
import { REPORTING_CONTROLLER } from '../../core/catalogue/names.ts';

// A watched (or listed) Event -> signals, through the same parser and classifier as POST
// /v1/events, so one incident has one identity whichever way it came. Its source is
// `k8s-watch-event`, not the Node watch's `k8s-watch`: whoever may create Events in the Node's
// namespace wrote it (kubelet's credentials on any node can), so triage corroborates it against
// the Node as it does a posted one (Ready, recently, on the boot it names). For the same reason it
// gets no boot identity here: a `NodeReady` Event given the node's current boot before triage
// would name the boot the Node runs and pass the boot check whatever the Node's Ready says;
// triage gives it that boot after the Node agreed (src/core/signals/boot-identity.ts).

export type EventOutcome =
  | { outcome: 'signal'; signals: Signal[] }
  | { outcome: 'ignored'; reason: IgnoreReason; detail: string }
  | { outcome: 'invalid'; reason: string }
  | { outcome: 'own' };

export function eventSignals(obj: unknown, trust: EventTrust): EventOutcome {
  const parsed = KubeEventPayload.safeParse(obj);
  if (!parsed.success) return { outcome: 'invalid', reason: parsed.error.issues[0]?.message ?? 'not an Event' };
  const ev = parsed.data;
  if (ev.component === REPORTING_CONTROLLER) return { outcome: 'own' };
  const c = classifyEvent(ev, 'k8s-watch-event', trust);
  if (c.ignored) return { outcome: 'ignored', reason: c.ignored.reason, detail: c.ignored.detail };
  return { outcome: 'signal', signals: c.signals };
}

/** When an Event last happened, in ms: the newest of its timestamps. */
export function eventLastSeen(obj: unknown): number {
  const field = (o: unknown, k: string): unknown => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined);
  const times = [
    field(obj, 'lastTimestamp'),
    field(obj, 'eventTime'),
    field(field(obj, 'series'), 'lastObservedTime'),
    field(obj, 'firstTimestamp'),
    field(field(obj, 'metadata'), 'creationTimestamp'),
  ]
    .map((t) => (typeof t === 'string' || typeof t === 'number' || t instanceof Date ? new Date(t).getTime() : Number.NaN))
    .filter((t) => !Number.isNaN(t));
  return times.length > 0 ? Math.max(...times) : 0;
}
