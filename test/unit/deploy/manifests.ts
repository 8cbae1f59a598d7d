import { DEPLOY_DIR, renderSet, VALUE_SETS, type KObject } from '../../../scripts/deploy/chart.ts';
import { SecretsSpec } from '../../../src/control/secrets/spec.ts';

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
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  livenessProbe?: { httpGet?: { path: string } };
  readinessProbe?: { httpGet?: { path: string } };
  volumeMounts?: { name: string; mountPath: string }[];
};
export type PodSpec = {
  containers: Container[];
  hostPID?: boolean;
  hostNetwork?: boolean;
  serviceAccountName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  volumes?: { name: string; hostPath?: { path: string }; secret?: { secretName: string; optional?: boolean } }[];
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
