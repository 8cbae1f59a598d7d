import { hostname } from 'node:os';
import type { V1DeleteOptions } from '@kubernetes/client-node';
import type { CoreWritesApi, EventsApi } from './api/apis.ts';
import { isNotFound } from './api/not-found.ts';
import { EventWriter, eventObjectName } from './event-writer.ts';
import { type DeletePodRequest, type PatchNodeTaintsRequest, PreconditionFailedError, type StepEvent } from './write-requests.ts';

// The Kubernetes write port (workers/kube-writes/kube-writes.ts) against the API server, on
// whichever client the component has: the node agent's REST client (rest/apis.ts) or
// @kubernetes/client-node's CoreV1Api/EventsV1Api (the cluster worker). Each component gets only
// the writes its role grants (src/adapters/kube/rbac.ts): asking for another fails here, with a
// reason, before a request goes out that RBAC would refuse with a bare 403.
//
// The API server enforces the preconditions, not this code: DeleteOptions.preconditions
// {uid, resourceVersion} make a DELETE of a pod that was re-created or changed since it was read
// a 409 Conflict; a JSON patch's `test` ops make a PATCH of a Node whose taints moved a 422
// (see test/testkit/fake-kube-api.ts for the answers, as kube-apiserver gives them).

type KubeWriteCall = 'delete-pod' | 'patch-node-taints' | 'event';

/** The writes each component's role allows (deploy/charts/volume-medic/templates/rbac.yaml). */
const COMPONENT_WRITES: Readonly<Record<'node-agent' | 'cluster-worker', readonly KubeWriteCall[]>> = {
  // readonly-filesystem-recovery deletes a pod of its own node (a ValidatingAdmissionPolicy holds it to that node).
  'node-agent': ['delete-pod', 'event'],
  // out-of-service-taint-release removes the out-of-service taint (a ValidatingAdmissionPolicy allows nothing else).
  'cluster-worker': ['patch-node-taints', 'event'],
};

export interface ApiKubeWritesOptions {
  component: keyof typeof COMPONENT_WRITES;
  core: CoreWritesApi;
  events: EventsApi;
  /** reportingInstance of the step Events: the node for the node agent, the pod name otherwise. Default os.hostname(). */
  instance?: string;
  now?: () => Date;
}

const code = (err: unknown): number | undefined => (err as { code?: unknown } | null)?.code as number | undefined;
/**
 * The API server's own words: client-node's ApiException carries the Status as its body (its
 * message is a dump of it), the REST client's error already says `HTTP <code>: <message>`.
 */
function message(err: unknown): string {
  const body = (err as { body?: unknown } | null)?.body;
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  const statusMessage = (parsed as { message?: unknown } | null | undefined)?.message;
  if (typeof statusMessage === 'string' && code(err) !== undefined) return `HTTP ${code(err)}: ${statusMessage}`;
  return err instanceof Error ? err.message : String(err);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class ApiKubeWrites {
  readonly #o: ApiKubeWritesOptions;
  readonly #events: EventWriter;

  constructor(o: ApiKubeWritesOptions) {
    this.#o = o;
    this.#events = new EventWriter({ events: o.events, instance: o.instance ?? hostname(), now: o.now ?? (() => new Date()) });
  }

  /** DELETE with DeleteOptions.preconditions; false when the pod is already gone (404). */
  async deletePod(r: DeletePodRequest): Promise<boolean> {
    this.#allow('delete-pod');
    const body: V1DeleteOptions = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: r.uid, resourceVersion: r.resourceVersion },
      ...(r.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: r.gracePeriodSeconds }),
    };
    try {
      await this.#o.core.deleteNamespacedPod({ namespace: r.namespace, name: r.name, body });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (code(err) === 409) {
        throw new PreconditionFailedError(`pod ${r.namespace}/${r.name} is no longer uid=${r.uid} rv=${r.resourceVersion}: ${message(err)}`, 409);
      }
      throw err;
    }
  }

  /** PATCH with a JSON patch; its `test` ops failing (422) or a conflict (409) is PreconditionFailedError. */
  async patchNodeTaints(r: PatchNodeTaintsRequest): Promise<void> {
    this.#allow('patch-node-taints');
    try {
      await this.#o.core.patchNode({ name: r.node, body: r.ops });
    } catch (err) {
      const status = code(err);
      if (status === 409 || status === 422) {
        throw new PreconditionFailedError(`node ${r.node} is no longer as the patch's test ops expect: ${message(err)}`, status);
      }
      throw err;
    }
  }

  /** One Event per (object, reason, type): a repeat bumps its series. */
  async event(e: StepEvent): Promise<void> {
    this.#allow('event');
    await this.#events.write({
      name: eventObjectName(e.involved, ['step', e.reason, e.type]),
      regarding: e.involved,
      reason: e.reason,
      type: e.type,
      action: e.reason,
      note: e.message,
    });
  }

  #allow(call: KubeWriteCall): void {
    if (!COMPONENT_WRITES[this.#o.component].includes(call)) {
      throw new Error(
        `the ${this.#o.component} may not ${call}: its role grants ${COMPONENT_WRITES[this.#o.component].join(', ')} only (src/adapters/kube/rbac.ts)`,
      );
    }
  }
}
