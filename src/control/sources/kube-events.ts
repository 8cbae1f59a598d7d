import type { Ignored, Signal, SourceResult } from '../../core/signals/index.ts';
import { classifyEvent } from './classify-event.ts';
import type { EventTrust } from './event-trust.ts';
import type { KubeEvent } from './kube-event.ts';

/** POST /v1/events: one Event or an array, core/v1 or events.k8s.io/v1. */
export function kubeEventSignals(body: KubeEvent | KubeEvent[], trust: EventTrust): SourceResult<Signal> {
  const events = Array.isArray(body) ? body : [body];
  const signals: Signal[] = [];
  const ignored: Ignored[] = [];
  events.forEach((e, index) => {
    const r = classifyEvent(e, 'k8s-event', trust);
    if (r.signals) signals.push(...r.signals);
    else ignored.push({ ...r.ignored, ...(events.length > 1 ? { index } : {}) });
  });
  return { signals, ignored };
}
