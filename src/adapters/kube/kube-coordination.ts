import { type Coordination, type CoordinationAnswer, mergeAnswers } from '../../core/coordination/coordination.ts';
import { drainOf } from '../../core/coordination/drain.ts';
import { KURED_LOCK_ANNOTATION, kuredLockHolders } from '../../core/coordination/kured-lock.ts';
import { remediationsOf } from '../../core/coordination/medik8s.ts';
import { z } from '../../core/zod.ts';

// The Coordination port on plain GETs of the API server (the node agent's KubeRest, the cluster
// worker's): kured's DaemonSet, the Node and its pods, the medik8s remediation lists, all read
// fresh for each destructive step. A 404 of kured's DaemonSet or of a remediation API group is
// "not installed": it holds nothing. Any other failure (403, 5xx, no answer) is unknown, and the
// step waits (docs/safety.md). The calls are the rows "coordination" of src/adapters/kube/rbac.ts.

/** GET of an API path; rejects with an error whose `code` is the HTTP status (KubeRest, client-node). */
export type KubeRead = (path: string, query?: Record<string, string>) => Promise<unknown>;

export interface KubeCoordinationOptions {
  get: KubeRead;
  /** kured's DaemonSet (KURED_DAEMONSET), whose annotation holds its reboot lock. */
  kured: { namespace: string; name: string; annotation?: string };
  /** Where remediation objects are looked for; empty: every namespace (MEDIK8S_NAMESPACES). */
  medik8sNamespaces: readonly string[];
  now?: () => Date;
}

const codeOf = (err: unknown): number | undefined => {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
};
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const seg = encodeURIComponent;

const Meta = z.lazy(() =>
  z.object({
    name: z.string(),
    namespace: z.optional(z.string()),
    annotations: z.optional(z.nullable(z.record(z.string(), z.string()))),
    deletionTimestamp: z.optional(z.nullable(z.string())),
  }),
);
const Named = z.lazy(() => z.object({ metadata: Meta }));
const NamedList = z.lazy(() => z.object({ items: z.nullable(z.array(Named)) }));
const NodeSpec = z.lazy(() => z.object({ spec: z.optional(z.object({ unschedulable: z.optional(z.nullable(z.boolean())) })) }));

/** The two medik8s remediators that name the node they act on (docs/safety.md). */
const REMEDIATIONS = [
  { kind: 'SelfNodeRemediation', group: 'self-node-remediation.medik8s.io', plural: 'selfnoderemediations' },
  { kind: 'FenceAgentsRemediation', group: 'fence-agents-remediation.medik8s.io', plural: 'fenceagentsremediations' },
] as const;

export class KubeCoordination implements Coordination {
  readonly #o: KubeCoordinationOptions;

  constructor(o: KubeCoordinationOptions) {
    this.#o = o;
  }

  async busy(node: string): Promise<CoordinationAnswer> {
    return mergeAnswers(await Promise.all([this.kured(node), this.drain(node), this.medik8s(node)]));
  }

  async kured(node: string): Promise<CoordinationAnswer> {
    const { namespace, name, annotation = KURED_LOCK_ANNOTATION } = this.#o.kured;
    const where = `daemonset ${namespace}/${name}`;
    let raw: unknown;
    try {
      raw = await this.#o.get(`/apis/apps/v1/namespaces/${seg(namespace)}/daemonsets/${seg(name)}`);
    } catch (err) {
      if (codeOf(err) === 404) return { busy: false };
      return { unknown: `kured's lock on ${where} could not be read: ${message(err)}` };
    }
    const ds = Named.safeParse(raw);
    if (!ds.success) return { unknown: `kured's ${where} is not a DaemonSet as expected` };
    const holders = kuredLockHolders(ds.data.metadata.annotations?.[annotation], this.#o.now?.() ?? new Date());
    if ('error' in holders) return { unknown: holders.error };
    if (!holders.nodes.includes(node)) return { busy: false };
    return { busy: true, who: 'kured', why: `holds the reboot lock for ${node}: ${annotation} on ${where}` };
  }

  async drain(node: string): Promise<CoordinationAnswer> {
    try {
      const spec = NodeSpec.parse(await this.#o.get(`/api/v1/nodes/${seg(node)}`)).spec;
      // Only a cordoned node can be draining: its pods are listed only then.
      if (spec?.unschedulable !== true) return { busy: false };
      const pods = NamedList.parse(await this.#o.get('/api/v1/pods', { fieldSelector: `spec.nodeName=${node}` })).items ?? [];
      const why = drainOf(
        node,
        { unschedulable: true },
        pods.map((p) => p.metadata),
      );
      return why ? { busy: true, who: 'drain', why } : { busy: false };
    } catch (err) {
      // The node gone: nothing drains it (and the step's own checks find it gone).
      if (codeOf(err) === 404) return { busy: false };
      return { unknown: `whether ${node} is being drained could not be read: ${message(err)}` };
    }
  }

  async medik8s(node: string): Promise<CoordinationAnswer> {
    const answers = await Promise.all(REMEDIATIONS.flatMap((r) => this.#paths(r).map((path) => this.#remediations(node, r.kind, path))));
    return mergeAnswers(answers);
  }

  #paths(r: (typeof REMEDIATIONS)[number]): string[] {
    const base = `/apis/${r.group}/v1alpha1`;
    const ns = this.#o.medik8sNamespaces;
    return ns.length === 0 ? [`${base}/${r.plural}`] : ns.map((n) => `${base}/namespaces/${seg(n)}/${r.plural}`);
  }

  async #remediations(node: string, kind: string, path: string): Promise<CoordinationAnswer> {
    try {
      const names = remediationsOf(node, NamedList.parse(await this.#o.get(path)).items ?? []);
      if (names.length === 0) return { busy: false };
      return { busy: true, who: 'medik8s', why: `${kind} ${names.join(', ')} remediates ${node}` };
    } catch (err) {
      // The API group not installed (no CRD): no remediation of that kind.
      if (codeOf(err) === 404) return { busy: false };
      return { unknown: `${kind}s could not be listed: ${message(err)}` };
    }
  }
}
