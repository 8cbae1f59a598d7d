import { z } from 'zod';

// Kubernetes Events arrive in two shapes: core/v1 (what kubernetes-event-exporter's webhook sends,
// plus its own `clusterName`) and events.k8s.io/v1 (`regarding`, `note`, `reportingController`).
// Both are normalised to one KubeEvent so classification is written once. The watch source
// (Kubernetes adapter) produces the same shape.

const ObjectRef = z
  .object({
    kind: z.string().optional(),
    name: z.string().optional(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    fieldPath: z.string().optional(),
  })
  .loose();

const Meta = z.object({ uid: z.string().optional(), name: z.string().optional(), namespace: z.string().optional() }).loose();

const CoreV1Event = z
  .object({
    metadata: Meta.optional(),
    involvedObject: ObjectRef,
    reason: z.string().optional(),
    message: z.string().optional(),
    type: z.string().optional(),
    source: z.object({ component: z.string().optional(), host: z.string().optional() }).loose().optional(),
    count: z.number().optional(),
    firstTimestamp: z.string().nullable().optional(),
    lastTimestamp: z.string().nullable().optional(),
    eventTime: z.string().nullable().optional(),
    reportingComponent: z.string().optional(),
    reportingInstance: z.string().optional(),
    clusterName: z.string().optional(),
  })
  .loose();

const EventsV1Event = z
  .object({
    metadata: Meta.optional(),
    regarding: ObjectRef,
    reason: z.string().optional(),
    note: z.string().optional(),
    type: z.string().optional(),
    reportingController: z.string().optional(),
    reportingInstance: z.string().optional(),
    deprecatedSource: z.object({ component: z.string().optional(), host: z.string().optional() }).loose().optional(),
    deprecatedCount: z.number().optional(),
    eventTime: z.string().nullable().optional(),
    series: z.object({ count: z.number().optional() }).loose().optional(),
  })
  .loose();

export interface KubeEvent {
  uid?: string;
  /**
   * The namespace the Event itself lives in (metadata.namespace): the one field a sender cannot
   * choose freely, because creating an Event there needs RBAC in that namespace. Kubelet writes
   * a Pod's events in the pod's namespace and a Node's in `default`.
   */
  namespace?: string;
  reason: string;
  message: string;
  type?: string;
  involved: { kind?: string; name?: string; namespace?: string; uid?: string };
  /** The component that reported it (kubelet, custom-plugin-monitor...): the first non-empty reporter field. */
  component?: string;
  /**
   * Every non-empty reporter field the event carries: core/v1 `source.component` and
   * `reportingComponent`, events.k8s.io/v1 `reportingController` and `deprecatedSource.component`.
   * The recorder of client-go fills both of a pair with the same name; the trust check wants all
   * of them to agree (event-trust.ts).
   */
  reporters: string[];
  /** The node that reported it: source.host, or reportingInstance for kubelet in events.k8s.io/v1. */
  host?: string;
  raw: unknown;
}

const ref = (r: z.infer<typeof ObjectRef>): KubeEvent['involved'] => ({ kind: r.kind, name: r.name, namespace: r.namespace, uid: r.uid });
const present = (...names: Array<string | undefined>): string[] => names.filter((n): n is string => n !== undefined && n !== '');

/** Either shape, parsed and normalised in one step. */
export const KubeEventPayload = z.union([
  CoreV1Event.transform(
    (e): KubeEvent => ({
      uid: e.metadata?.uid,
      namespace: e.metadata?.namespace || undefined,
      reason: e.reason ?? '',
      message: e.message ?? '',
      type: e.type,
      involved: ref(e.involvedObject),
      component: present(e.source?.component, e.reportingComponent)[0],
      reporters: present(e.source?.component, e.reportingComponent),
      host: e.source?.host || undefined,
      raw: e,
    }),
  ),
  EventsV1Event.transform(
    (e): KubeEvent => ({
      uid: e.metadata?.uid,
      namespace: e.metadata?.namespace || undefined,
      reason: e.reason ?? '',
      message: e.note ?? '',
      type: e.type,
      involved: ref(e.regarding),
      component: present(e.reportingController, e.deprecatedSource?.component)[0],
      reporters: present(e.reportingController, e.deprecatedSource?.component),
      host: e.deprecatedSource?.host || (e.reportingController === 'kubelet' ? e.reportingInstance : undefined) || undefined,
      raw: e,
    }),
  ),
]);
/** One Event or an array of them, as the exporter's webhook (or a batching proxy) sends. */
export const KubeEventsBody = z.union([KubeEventPayload, z.array(KubeEventPayload).max(10_000)]);
