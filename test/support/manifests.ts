import { DEPLOY_DIR, renderSet, VALUE_SETS, type KObject } from '../../scripts/deploy/chart.ts';
import { SecretsSpec } from '../../src/control/secrets/spec.ts';

// Shared by the deploy tests: the chart rendered with every CI values set (deploy/charts/
// volume-medic/ci/<name>-values.yaml) and with deploy/volume-medic.yaml's values (`static`).

export { DEPLOY_DIR };

/** Every values set CI renders, `static` (deploy/volume-medic.yaml) included. */
export const SETS: readonly string[] = [...VALUE_SETS, 'static'];

const cache = new Map<string, KObject[]>();
/** The chart rendered with one values set (helm template; cached per test file). */
export function rendered(set: string): KObject[] {
  let objects = cache.get(set);
  if (!objects) {
    objects = renderSet(set);
    cache.set(set, objects);
  }
  return objects;
}

type Container = {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  livenessProbe?: { httpGet?: { path: string } };
  readinessProbe?: { httpGet?: { path: string } };
  volumeMounts?: { name: string; mountPath: string }[];
};
type NodeSelectorRequirement = { key: string; operator: string; values?: string[] };
type NodeSelectorTerm = { matchExpressions?: NodeSelectorRequirement[]; matchFields?: NodeSelectorRequirement[] };
export type PodSpec = {
  containers: Container[];
  hostPID?: boolean;
  hostNetwork?: boolean;
  serviceAccountName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  affinity?: {
    nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: NodeSelectorTerm[] }; [k: string]: unknown };
    [k: string]: unknown;
  };
  volumes?: {
    name: string;
    hostPath?: { path: string };
    secret?: { secretName: string; optional?: boolean };
    configMap?: { name: string };
    projected?: { sources?: { serviceAccountToken?: { path: string; audience?: string; expirationSeconds?: number } }[] };
  }[];
  automountServiceAccountToken?: boolean;
};

export function podSpec(o: KObject): PodSpec | undefined {
  const spec = o['spec'] as { template?: { spec?: PodSpec } } | undefined;
  return spec?.template?.spec;
}

export function find(objects: readonly KObject[], kind: string, name: string): KObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} is not rendered`);
  return o;
}

/** What the chart's secrets hook Job would make (its SECRETS_SPEC), or undefined without the Job. */
export function secretsSpec(objects: readonly KObject[]): SecretsSpec | undefined {
  const job = objects.find((o) => o.kind === 'Job' && o.metadata.name === 'volume-medic-secrets');
  if (!job) return undefined;
  const raw = podSpec(job)!.containers[0]!.env!.find((e) => e.name === 'SECRETS_SPEC')!.value!;
  return SecretsSpec.parse(JSON.parse(raw));
}

/** volume-medic's control plane: what holds the issuer roots, the control-signing key and Redis passwords. */
export const CONTROL_PLANE = [
  ['Deployment', 'volume-medic-receiver'],
  ['Deployment', 'volume-medic-cluster-worker'],
  ['StatefulSet', 'volume-medic-redis'],
  ['Job', 'volume-medic-secrets'],
  ['Job', 'volume-medic-uninstall-check'],
] as const;

function requirementHolds(r: NodeSelectorRequirement, value: string | undefined): boolean {
  switch (r.operator) {
    case 'In':
      return value !== undefined && (r.values ?? []).includes(value);
    case 'NotIn':
      return value === undefined || !(r.values ?? []).includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    default:
      throw new Error(`node selector operator ${r.operator} is not evaluated here`);
  }
}

export interface TestNode {
  name: string;
  labels: Record<string, string>;
}

/**
 * Whether the scheduler may put a pod on this node by its nodeSelector and required node affinity,
 * as Kubernetes reads them (the selector ANDed with any one term; a term's requirements ANDed;
 * NotIn and DoesNotExist hold for a node without the label). Taints are not considered.
 */
export function schedulableOn(spec: PodSpec, node: TestNode): boolean {
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) if (node.labels[k] !== v) return false;
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms) return true;
  return terms.some(
    (t) =>
      (t.matchExpressions ?? []).every((r) => requirementHolds(r, node.labels[r.key])) &&
      (t.matchFields ?? []).every((r) => requirementHolds(r, r.key === 'metadata.name' ? node.name : undefined)),
  );
}
