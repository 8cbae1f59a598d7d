import { createHash } from '../../core/node-crypto.ts';
import type { EventsV1Event } from '@kubernetes/client-node';
import type { EventsApi } from './api/apis.ts';
import { REPORTING_CONTROLLER } from '../../core/catalogue/names.ts';
import { isNotFound } from './api/not-found.ts';

// How volume-medic writes a Kubernetes Event (events.k8s.io/v1), for every caller: a job's
// outcome (job-events.ts) and a step's own Event (api-kube-writes.ts). The Event's name is derived
// from what makes it "the same Event" (its object, and the caller's key), so a repeat bumps that
// Event's series count instead of adding objects, including across restarts and replicas.
// A repeat changes `series` only: the API server refuses any other change to an events.k8s.io/v1
// Event (422, "field is immutable": note, reason, type, action, regarding, reporting*), as
// client-go's own recorder knows. So an Event keeps its first note, and a caller words the note
// so that it holds for every repeat of its key (no attempt number in it: the count says that).

/** The object an Event is about. */
export interface EventSubject {
  kind: 'Node' | 'Pod' | 'PersistentVolume' | 'PersistentVolumeClaim';
  name: string;
  /** Namespaced kinds only; Node and PV Events go to `default`, as the kubelet's do. */
  namespace?: string;
  uid?: string;
}

const NAMESPACED: ReadonlySet<EventSubject['kind']> = new Set(['Pod', 'PersistentVolumeClaim']);

/** Where an Event about the subject lives: the object's namespace, or `default` for cluster-scoped objects. */
export const eventNamespace = (s: EventSubject): string => (NAMESPACED.has(s.kind) ? (s.namespace ?? 'default') : 'default');

/** `<object name>.vm-<hash of the subject and key>`: one name per (subject, key), stable across processes. */
export function eventObjectName(r: EventSubject, key: readonly string[]): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([r.kind, r.namespace ?? '', r.name, ...key]))
    .digest('hex')
    .slice(0, 16);
  return `${r.name.slice(0, 200)}.vm-${hash}`;
}

export interface EventToWrite {
  name: string;
  regarding: EventSubject;
  reason: string;
  type: 'Normal' | 'Warning';
  action: string;
  note: string;
  /** Set at creation (an Event's metadata may carry what its name cannot: the job it is about). */
  annotations?: Record<string, string>;
}

export interface WrittenEvent {
  namespace: string;
  name: string;
  result: 'created' | 'updated';
  count: number;
}

const NOTE_MAX = 1024;

/** MicroTime as the API server parses it: RFC 3339 with exactly six fractional digits. */
const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class EventWriter {
  private readonly api: EventsApi;
  private readonly instance: string;
  private readonly now: () => Date;
  /** Series counts this process wrote, by namespace/name; saves a read before each repeat. */
  private readonly counts = new Map<string, number>();

  constructor(o: { events: EventsApi; instance: string; now: () => Date }) {
    this.api = o.events;
    this.instance = o.instance.slice(0, 128);
    this.now = o.now;
  }

  /** Creates the Event, or bumps its series when it exists. Throws what the API server answered. */
  async write(e: EventToWrite): Promise<WrittenEvent> {
    const namespace = eventNamespace(e.regarding);
    const { name } = e;
    const note = e.note.slice(0, NOTE_MAX);
    const at = microTime(this.now());
    const known = this.counts.get(`${namespace}/${name}`);
    if (known !== undefined) {
      const count = await this.bump(namespace, name, known, at);
      if (count !== undefined) return { namespace, name, result: 'updated', count };
    }
    try {
      await this.api.createNamespacedEvent({ namespace, body: this.body(e, namespace, note, at) });
      this.counts.set(`${namespace}/${name}`, 1);
      return { namespace, name, result: 'created', count: 1 };
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      // Written before by another replica or an earlier run of this process: continue its series.
      const existing = await this.api.readNamespacedEvent({ namespace, name });
      const count = await this.bump(namespace, name, existing.series?.count ?? 1, at);
      if (count === undefined) throw new Error(`event ${namespace}/${name} vanished while being updated`);
      return { namespace, name, result: 'updated', count };
    }
  }

  /** The count this process last wrote for an Event (0 when none). */
  countOf(namespace: string, name: string): number {
    return this.counts.get(`${namespace}/${name}`) ?? 0;
  }

  private body(e: EventToWrite, namespace: string, note: string, at: string): EventsV1Event {
    const r = e.regarding;
    return {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        name: e.name,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': REPORTING_CONTROLLER },
        ...(e.annotations ? { annotations: e.annotations } : {}),
      },
      // The generated model types MicroTime as Date but passes it through unserialised; a Date
      // would go out with millisecond precision, which the API server's MicroTime refuses.
      eventTime: at as unknown as Date,
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: this.instance,
      action: e.action.slice(0, 128),
      reason: e.reason,
      type: e.type,
      note,
      regarding: {
        apiVersion: 'v1',
        kind: r.kind,
        name: r.name,
        ...(NAMESPACED.has(r.kind) ? { namespace } : {}),
        ...(r.uid ? { uid: r.uid } : {}),
      },
    };
  }

  /** series.count + 1; undefined when the Event no longer exists (Events expire, 1 h by default). */
  private async bump(namespace: string, name: string, count: number, at: string): Promise<number | undefined> {
    const next = count + 1;
    try {
      await this.api.patchNamespacedEvent({
        namespace,
        name,
        body: [{ op: 'add', path: '/series', value: { count: next, lastObservedTime: at } }],
      });
    } catch (err) {
      if (isNotFound(err)) {
        this.counts.delete(`${namespace}/${name}`);
        return undefined;
      }
      throw err;
    }
    this.counts.set(`${namespace}/${name}`, next);
    return next;
  }
}
