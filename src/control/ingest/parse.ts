import type { z } from 'zod';
import { AlertmanagerPayload, alertmanagerSignals } from '../sources/alertmanager.ts';
import { KubeEventsBody } from '../sources/kube-event.ts';
import { kubeEventSignals } from '../sources/kube-events.ts';
import { NpdBody, npdSignals } from '../sources/npd.ts';
import type { EventTrust } from '../sources/event-trust.ts';
import type { Signal, SourceResult } from '../../core/signals/index.ts';
import { describeZodError } from './zod-error.ts';

// Body -> signals for each webhook source. A body that fails its schema is a 422 naming the
// field; a body that parses but holds nothing for us is a 202 with ignored reasons.

export const WEBHOOK_SOURCES = ['alertmanager', 'events', 'npd'] as const;
export type WebhookSource = (typeof WEBHOOK_SOURCES)[number];

export interface ParseOptions {
  nodeRecoveryAlerts: ReadonlySet<string>;
  /** Which Events are believed (NPD_EVENT_SOURCES, NPD_EVENT_NAMESPACE). */
  eventTrust: EventTrust;
}

export type Parsed = ({ ok: true } & SourceResult<Signal>) | { ok: false; error: string };

function run<S extends z.ZodType, T>(schema: S, body: unknown, f: (v: z.output<S>) => T): { ok: true; value: T } | { ok: false; error: string } {
  const r = schema.safeParse(body);
  return r.success ? { ok: true, value: f(r.data) } : { ok: false, error: describeZodError(r.error) };
}

export function parseWebhook(source: WebhookSource, body: unknown, opts: ParseOptions): Parsed {
  const r = (() => {
    switch (source) {
      case 'alertmanager':
        return run(AlertmanagerPayload, body, (p) => alertmanagerSignals(p, opts) as SourceResult<Signal>);
      case 'events':
        return run(KubeEventsBody, body, (b) => kubeEventSignals(b, opts.eventTrust));
      case 'npd':
        return run(NpdBody, body, (b) => npdSignals(b, opts.eventTrust));
      default: {
        const never: never = source;
        return never;
      }
    }
  })();
  return r.ok ? { ok: true, ...r.value } : r;
}
